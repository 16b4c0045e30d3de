//! Late events in a runner: the policy, the side file, and the JSON line
//! written there for each late event (`--late side:FILE`). Apart from the
//! push path, which only calls [`Runner::on_late`] when an event falls
//! behind the watermark.

use std::io::{self, Write};

use cep_core::{Event, Timestamp};
use cep_time::LatePolicy;

use super::Runner;
use crate::PushError;

impl Runner {
    /// Sets the late-event policy (creating the side file, if any).
    pub fn set_late_policy(&mut self, policy: LatePolicy) -> io::Result<()> {
        self.set_late_policy_at(policy, 0)
    }

    /// Sets the late-event policy; a side file keeps its first `keep` bytes
    /// (a resumed run continues the file its checkpoint saw) and is
    /// written after them.
    pub fn set_late_policy_at(&mut self, policy: LatePolicy, keep: u64) -> io::Result<()> {
        if let LatePolicy::Side(path) = &policy {
            let mut file = std::fs::OpenOptions::new().create(true).write(true).truncate(keep == 0).open(path)?;
            if keep > 0 {
                if file.metadata()?.len() < keep {
                    return Err(io::Error::other(format!("{path} is shorter than its checkpoint says ({keep} bytes)")));
                }
                file.set_len(keep)?;
                io::Seek::seek(&mut file, io::SeekFrom::End(0))?;
            }
            self.late_out = Some(io::BufWriter::new(file));
        }
        self.late = policy;
        Ok(())
    }

    pub(super) fn on_late(&mut self, e: &Event, watermark: Timestamp) -> Result<(), PushError> {
        // Counted under every policy: the summary of a run that `Fail`
        // stopped says what stopped it.
        self.summary.late += 1;
        match &self.late {
            LatePolicy::Fail => return Err(PushError::Late { ts: e.ts, watermark }),
            LatePolicy::Drop => {}
            LatePolicy::Side(_) => {
                if let Some(out) = &mut self.late_out {
                    write_event_json(&mut self.line, e, &self.field_names);
                    out.write_all(&self.line)?;
                }
            }
        }
        Ok(())
    }
}

/// Formats an event as a JSON line with its row (for `--late side:FILE`):
/// `{"row":3,"ts":5,"type":"Tick","price":10}`; NULL fields are left out.
fn write_event_json(line: &mut Vec<u8>, e: &Event, names: &[String]) {
    line.clear();
    line.extend_from_slice(b"{\"row\":");
    cep_core::json::write_u64(line, e.row);
    line.extend_from_slice(b",\"ts\":");
    cep_core::json::write_i64(line, e.ts);
    line.extend_from_slice(b",\"type\":");
    cep_core::json::write_str(line, e.ty.as_str());
    for (i, v) in e.fields.iter().enumerate() {
        if v.is_null() {
            continue;
        }
        line.push(b',');
        match names.get(i) {
            Some(n) => cep_core::json::write_str(line, n),
            None => cep_core::json::write_str(line, &format!("field{i}")),
        }
        line.push(b':');
        cep_core::json::write_value(line, v);
    }
    line.extend_from_slice(b"}\n");
}
