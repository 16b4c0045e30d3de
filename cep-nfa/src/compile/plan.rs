//! A human-readable plan of a compiled query, as `cep check` prints it.

use std::fmt::Write;

use crate::program::{Program, SkipTo, Window};

/// Renders the plan of `prog`: elements and their conditions, the NFA's
/// edges, negations, registers, windows and the engine `Auto` picks.
pub fn render<E>(prog: &Program<E>) -> String {
    render_with(prog, crate::select::EngineChoice::Auto)
}

/// [`render`] with the engine `choice` gives (a forced engine that cannot
/// run the query is named with the reason).
pub fn render_with<E>(prog: &Program<E>, choice: crate::select::EngineChoice) -> String {
    let win = |w: Option<Window>| match w {
        Some(Window::Time(t)) => format!("{t} ts units"),
        Some(Window::Events(n)) => format!("{n} events"),
        None => "none".to_owned(),
    };
    let mut s = String::new();
    let _ = writeln!(s, "query {}", prog.name);
    match crate::select::explain(prog, choice) {
        Ok((crate::select::EngineKind::Run, why)) => {
            let _ = writeln!(s, "  engine: run (NFA runs over the shared buffer; {why})");
        }
        Ok((kind, why)) => {
            let _ = writeln!(s, "  engine: {} ({why})", kind.name());
        }
        Err(why) => {
            let _ = writeln!(s, "  engine: none ({why})");
        }
    }
    let _ = writeln!(s, "  strategy: {}", prog.strategy.name());
    let _ = writeln!(s, "  window: {}", win(prog.window));
    let _ = writeln!(
        s,
        "  partition: {}",
        prog.key.as_ref().map_or("none (one partition)".to_owned(), |(f, _)| format!("by `{f}`"))
    );
    let _ = writeln!(s, "  select: {:?}", prog.select);
    let skip = match prog.skip {
        SkipTo::None => "none".to_owned(),
        SkipTo::NextEvent => "to next event".to_owned(),
        SkipTo::PastLastEvent => "past last event".to_owned(),
        SkipTo::First(i) => format!("to first {}", prog.elements[i].var),
        SkipTo::Last(i) => format!("to last {}", prog.elements[i].var),
    };
    let _ = writeln!(s, "  after match skip: {skip}");
    let _ = writeln!(s, "  elements:");
    for (i, el) in prog.elements.iter().enumerate() {
        let _ = writeln!(
            s,
            "    [{i}] {}{} {}{}",
            el.types.join("|"),
            el.quant.symbol(),
            el.var,
            el.within.map_or(String::new(), |w| format!(" within {}", win(Some(w))))
        );
        for c in &el.conds {
            let note = if c.skip_first { "  (not for the first event)" } else { "" };
            let _ = writeln!(s, "        each event: {}{note}", c.text);
        }
        for c in &el.completion {
            let note = if c.at_first { "  (decided by the first event)" } else { "" };
            let _ = writeln!(s, "        when complete: {}{note}", c.text);
        }
        for c in &el.remote {
            let _ = writeln!(s, "        each event, asking `{}` (remote): {}", c.name, c.text);
        }
    }
    for g in &prog.negations {
        let _ = writeln!(
            s,
            "    NOT {} {} between [{}] and [{}]{}",
            g.types.join("|"),
            g.var,
            g.after,
            g.after + 1,
            g.deferred.map_or(String::new(), |d| format!(", checked when [{}] is complete", d.check_after))
        );
        for c in &g.early {
            let _ = writeln!(s, "        kills on arrival if: {}", c.text);
        }
        for c in &g.late {
            let _ = writeln!(s, "        kills if: {}", c.text);
        }
    }
    if let Some(t) = &prog.trailing {
        let _ = writeln!(s, "    NOT {} {} for {} ts units after the last event", t.types.join("|"), t.var, t.quiet);
        for c in &t.conds {
            let _ = writeln!(s, "        kills if: {}", c.text);
        }
    }
    if prog.elements.iter().any(|e| !e.remote.is_empty()) {
        let _ = match crate::engines::run::lazy_fits(prog) {
            None => writeln!(
                s,
                "  remote calls: as --remote-mode says (auto: lazy while answers take more than a few µs, else blocking)"
            ),
            Some(why) => writeln!(s, "  remote calls: blocking in every mode ({why})"),
        };
    }
    let _ = writeln!(s, "  transitions:");
    let starts: Vec<String> = prog.start_edges().iter().map(|j| format!("[{j}]")).collect();
    let _ = writeln!(s, "    start -> {}", starts.join(", "));
    for (i, el) in prog.elements.iter().enumerate() {
        let mut targets: Vec<String> = Vec::new();
        if el.quant.is_kleene() {
            targets.push(format!("[{i}] (loop)"));
        }
        targets.extend(prog.next_edges(i).iter().map(|j| format!("[{j}]")));
        if prog.is_accepting(i) {
            targets.push(if prog.trailing.is_some() { "match after the quiet period".into() } else { "match".into() });
        }
        let _ = writeln!(s, "    [{i}] -> {}", targets.join(", "));
    }
    if !prog.emit.is_empty() {
        let _ = writeln!(s, "  emit (values each match carries, read from the final match):");
        for item in &prog.emit {
            let _ = writeln!(s, "    {}: {}", item.name, item.reads);
        }
    }
    if !prog.slot_names.is_empty() {
        let _ = writeln!(s, "  frame (values read from each event): {}", prog.slot_names.join(", "));
    }
    if !prog.reg_names.is_empty() {
        let _ = writeln!(s, "  registers (values kept per partial match): {}", prog.reg_names.join(", "));
    }
    s
}
