//! The `cep-geo serve` binary end to end on 127.0.0.1:0: started, asked
//! over HTTP/1.1 with keep-alive, killed after (each test bounded in time).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use cep_geo::{Config, ProximityIndex, load_csv_file};
use cep_testkit::Scratch;

const BOUND: Duration = Duration::from_secs(30);

/// A running server, killed when dropped.
struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Server {
    fn start(args: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_cep-geo"))
            .arg("serve")
            .args(["--listen", "127.0.0.1:0", "--exit-on-stdin-eof"])
            .args(args)
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start cep-geo");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(addr) = line.strip_prefix("listening on ") {
                    let _ = tx.send(addr.parse::<SocketAddr>().expect("address"));
                }
            }
        });
        let addr = match rx.recv_timeout(BOUND) {
            Ok(a) => a,
            Err(_) => {
                let _ = child.kill();
                panic!("no `listening on` line within {BOUND:?}");
            }
        };
        Server { child, addr }
    }

    fn connect(&self) -> Client {
        let s = TcpStream::connect(self.addr).expect("connect");
        s.set_read_timeout(Some(BOUND)).expect("timeout");
        Client(BufReader::new(s))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A minimal HTTP/1.1 client on one kept-alive connection.
struct Client(BufReader<TcpStream>);

impl Client {
    fn request(&mut self, method: &str, path: &str, body: &str) -> (u16, String) {
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        let s = self.0.get_mut();
        s.write_all(head.as_bytes()).and_then(|()| s.write_all(body.as_bytes())).expect("send");
        let mut line = String::new();
        self.0.read_line(&mut line).expect("status line");
        let status: u16 = line.split(' ').nth(1).and_then(|c| c.parse().ok()).expect("status");
        let mut len = 0;
        loop {
            line.clear();
            self.0.read_line(&mut line).expect("header");
            if line.trim().is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    len = v.trim().parse().expect("length");
                }
            }
        }
        let mut body = vec![0; len];
        self.0.read_exact(&mut body).expect("body");
        (status, String::from_utf8(body).expect("utf-8"))
    }

    fn post(&mut self, body: &str) -> (u16, String) {
        self.request("POST", "/near", body)
    }
}

/// The results of a reply, by id.
fn results(reply: &str) -> HashMap<u64, bool> {
    let v: serde_json::Value = serde_json::from_str(reply).expect("reply JSON");
    let list = v["results"].as_array().expect("results");
    list.iter().map(|r| (r["id"].as_u64().expect("id"), r["value"].as_bool().expect("value"))).collect()
}

/// A small positions file (ten vessels a minute apart around Brest) in a
/// scratch directory, removed when the test ends.
fn positions_file(test: &str) -> (Scratch, String) {
    let dir = Scratch::new("geo-server", test);
    let mut text = String::from("type,ts,mmsi,lat,lon,speed,heading\n");
    for minute in 0..10i64 {
        for v in 0..10i64 {
            let lat = 48.38 + 0.002 * v as f64 + 0.0005 * minute as f64;
            let lon = -4.49 + 0.001 * ((v * 7 + minute) % 5) as f64;
            text.push_str(&format!(
                "AIS,{},{},{lat:.6},{lon:.6},10.0,90\n",
                minute * 60_000 + v * 100,
                235_000_001 + v
            ));
        }
    }
    let path = dir.write("ais.csv", text);
    (dir, path)
}

#[test]
fn batched_calls_are_answered_as_the_index_does() {
    let (_dir, path) = positions_file("batch");
    let server = Server::start(&["--positions", &path]);
    let index = ProximityIndex::new(load_csv_file(path.as_ref()).expect("load"), Config::default()).expect("index");
    let mut client = server.connect();
    let mut trues = 0;
    for round in 0..3u64 {
        let mut calls = Vec::new();
        let mut want = HashMap::new();
        for i in 0..200u64 {
            let id = 1_000_003 * (i + 1) + round;
            let mmsi = 235_000_001 + (i % 12) as i64;
            let lat = 48.38 + 0.0001 * ((i * 37) % 250) as f64;
            let lon = -4.49 + 0.0001 * ((i * 11) % 60) as f64;
            let ts = ((i * 7_919) % 660_000) as i64;
            want.insert(id, index.near(mmsi, lat, lon, ts).expect("near"));
            calls.push(format!(r#"{{"id":{id},"args":[{mmsi},{lat},{lon},{ts}]}}"#));
        }
        let (status, reply) = client.post(&format!(r#"{{"calls":[{}]}}"#, calls.join(",")));
        assert_eq!(status, 200, "{reply}");
        let got = results(&reply);
        assert_eq!(got, want);
        trues += got.values().filter(|v| **v).count();
    }
    assert!(trues > 30 && trues < 570, "{trues} of 600 true");
    // Any path; an empty batch.
    let (status, reply) = client.request("POST", "/", r#"{"calls":[]}"#);
    assert_eq!((status, reply.as_str()), (200, r#"{"results":[]}"#));
}

#[test]
fn bad_bodies_are_refused_with_400() {
    let (_dir, path) = positions_file("bad");
    let server = Server::start(&["--positions", &path]);
    let mut client = server.connect();
    for (body, says) in [
        ("{", "bad request body"),
        (r#"{"calls":[{"id":1,"args":[1,2.0,3.0]}]}"#, "4 arguments"),
        (r#"{"calls":[{"id":1,"args":[1,2.0,3.0,4,5]}]}"#, "4 arguments"),
        (r#"{"calls":[{"id":1,"args":["1",2.0,3.0,4]}]}"#, "`mmsi`"),
        (r#"{"calls":[{"id":1,"args":[1,true,3.0,4]}]}"#, "`lat`"),
        (r#"{"calls":[{"id":1,"args":[1,2.0,3.0,4.5]}]}"#, "`ts`"),
        (r#"{"calls":[{"id":1,"args":[1,2.0,190.0,4]}]}"#, "lon must be"),
        (r#"{"calls":[{"args":[1,2.0,3.0,4]}]}"#, "id"),
    ] {
        let (status, reply) = client.post(body);
        assert_eq!(status, 400, "{body}: {reply}");
        assert!(reply.contains(says), "{body}: {reply}");
    }
    // The connection is still good after errors.
    let (status, _) = client.post(r#"{"calls":[{"id":1,"args":[1,48.38,-4.49,1000]}]}"#);
    assert_eq!(status, 200);
    let (status, _) = client.request("GET", "/near", "");
    assert_eq!(status, 405);
}

#[test]
fn true_ratio_gives_about_p() {
    let server = Server::start(&["--true-ratio", "0.3"]);
    let mut client = server.connect();
    let calls: Vec<String> = (0..4000)
        .map(|i| {
            format!(
                r#"{{"id":{i},"args":[{},{},-4.49,{}]}}"#,
                235_000_000 + i % 50,
                48.0 + 0.001 * f64::from(i),
                i * 1000
            )
        })
        .collect();
    let (status, reply) = client.post(&format!(r#"{{"calls":[{}]}}"#, calls.join(",")));
    assert_eq!(status, 200);
    let got = results(&reply);
    assert_eq!(got.len(), 4000);
    let ratio = got.values().filter(|v| **v).count() as f64 / 4000.0;
    assert!((ratio - 0.3).abs() < 0.03, "{ratio}");
    // Stable: the same calls, the same answers.
    let (_, again) = client.post(&format!(r#"{{"calls":[{}]}}"#, calls.join(",")));
    assert_eq!(results(&again), got);
}

#[test]
fn eval_delay_delays_each_call() {
    let server = Server::start(&["--true-ratio", "0.5", "--eval-delay", "40ms"]);
    let mut client = server.connect();
    let five = r#"{"calls":[{"id":1,"args":[1,1.0,1.0,1]},{"id":2,"args":[1,1.0,1.0,2]},{"id":3,"args":[1,1.0,1.0,3]},{"id":4,"args":[1,1.0,1.0,4]},{"id":5,"args":[1,1.0,1.0,5]}]}"#;
    let t = Instant::now();
    let (status, _) = client.post(five);
    assert_eq!(status, 200);
    assert!(t.elapsed() >= Duration::from_millis(200), "{:?}", t.elapsed());
    // Requests on two connections overlap: two at once take about as long
    // as one (200 ms), well under twice (400 ms).
    let t = Instant::now();
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let mut c = server.connect();
            std::thread::spawn(move || c.post(five).0)
        })
        .collect();
    for th in threads {
        assert_eq!(th.join().expect("thread"), 200);
    }
    assert!(t.elapsed() < Duration::from_millis(380), "{:?}", t.elapsed());

    let sub_ms = Server::start(&["--true-ratio", "0.5", "--eval-delay", "300us"]);
    let mut client = sub_ms.connect();
    let ten: Vec<String> = (0..10).map(|i| format!(r#"{{"id":{i},"args":[1,1.0,1.0,{i}]}}"#)).collect();
    let t = Instant::now();
    let (status, _) = client.post(&format!(r#"{{"calls":[{}]}}"#, ten.join(",")));
    assert_eq!(status, 200);
    assert!(t.elapsed() >= Duration::from_millis(3), "{:?}", t.elapsed());
}

#[cfg(unix)]
#[test]
fn stops_on_sigterm_and_on_stdin_eof() {
    let (_dir, path) = positions_file("stop");
    let mut server = Server::start(&["--positions", &path]);
    let killed = Command::new("kill").args(["-TERM", &server.child.id().to_string()]).status().expect("kill");
    assert!(killed.success());
    let t = Instant::now();
    let status = loop {
        if let Some(s) = server.child.try_wait().expect("wait") {
            break s;
        }
        assert!(t.elapsed() < BOUND, "still running after SIGTERM");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(status.success(), "{status:?}");

    let mut server = Server::start(&["--true-ratio", "0.5"]);
    drop(server.child.stdin.take());
    let t = Instant::now();
    while server.child.try_wait().expect("wait").is_none() {
        assert!(t.elapsed() < BOUND, "still running after stdin closed");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn bad_positions_exit_2_with_the_line() {
    let dir = Scratch::new("geo-server", "badfile");
    let path = dir.write("bad.csv", "ts,mmsi,lat,lon\n1,2,48.0,-4.0\n2,3,north,-4.0\n");
    let out = Command::new(env!("CARGO_BIN_EXE_cep-geo"))
        .args(["serve", "--listen", "127.0.0.1:0", "--positions"])
        .arg(&path)
        .stdin(Stdio::null())
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 3") && err.contains("`lat`"), "{err}");
}
