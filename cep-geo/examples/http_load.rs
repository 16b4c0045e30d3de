//! Answers per second of a running `cep-geo serve` over HTTP/1.1: CONNS
//! connections (threads), each sending requests of BATCH calls, one at a
//! time, kept alive, for SECONDS; the calls are the rows of a positions
//! file, in order.
//!
//! `cargo run --release -p cep-geo --example http_load -- 127.0.0.1:7070 /tmp/ais/ais.csv [CONNS] [BATCH] [SECONDS]`

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use cep_geo::{Position, load_csv_file};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(addr), Some(path)) = (args.first(), args.get(1)) else {
        eprintln!("usage: http_load ADDR FILE [CONNS] [BATCH] [SECONDS]");
        return ExitCode::from(2);
    };
    let num = |i: usize, default: u64| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(default);
    let (conns, batch, seconds) = (num(2, 2), num(3, 100) as usize, num(4, 5));
    let positions = match load_csv_file(path.as_ref()) {
        Ok(p) => std::sync::Arc::new(p),
        Err(e) => {
            eprintln!("error: {path}: {e}");
            return ExitCode::from(2);
        }
    };
    let start = Instant::now();
    let threads: Vec<_> = (0..conns)
        .map(|c| {
            let (addr, positions) = (addr.clone(), std::sync::Arc::clone(&positions));
            std::thread::spawn(move || load(&addr, &positions, c as usize, batch, Duration::from_secs(seconds)))
        })
        .collect();
    let mut answers = 0;
    for t in threads {
        match t.join() {
            Ok(Ok(n)) => answers += n,
            Ok(Err(e)) => {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
            Err(_) => return ExitCode::FAILURE,
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{answers} answers in {secs:.2} s over {conns} connections, {batch} calls a request: {:.0} answers/s",
        answers as f64 / secs
    );
    ExitCode::SUCCESS
}

/// One connection's requests until `time` is up; returns the answers.
fn load(addr: &str, positions: &[Position], conn: usize, batch: usize, time: Duration) -> std::io::Result<usize> {
    let stream = TcpStream::connect(addr)?;
    stream.set_nodelay(true)?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    let start = Instant::now();
    let mut next = conn * 7919;
    let mut answers = 0;
    let mut line = String::new();
    while start.elapsed() < time {
        let mut body = String::from(r#"{"calls":["#);
        for i in 0..batch {
            let p = positions[(next + i) % positions.len().max(1)];
            let sep = if i == 0 { "" } else { "," };
            body.push_str(&format!(r#"{sep}{{"id":{i},"args":[{},{},{},{}]}}"#, p.mmsi, p.lat, p.lon, p.ts));
        }
        body.push_str("]}");
        next += batch;
        write!(writer, "POST /near HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{body}", body.len())?;
        let mut len = 0;
        line.clear();
        reader.read_line(&mut line)?;
        if !line.contains(" 200 ") {
            return Err(std::io::Error::other(format!("answered {line:?}")));
        }
        loop {
            line.clear();
            reader.read_line(&mut line)?;
            if line.trim().is_empty() {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().map_err(std::io::Error::other)?;
            }
        }
        let mut reply = vec![0; len];
        reader.read_exact(&mut reply)?;
        answers += batch;
    }
    Ok(answers)
}
