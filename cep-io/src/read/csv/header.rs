//! The CSV header: its cells to columns (`ts`, `type`, fields, skipped
//! fields) registered in the schema, and the messages for a bad header.

use super::*;

/// Reads the CSV header and sets up the schema; errors are `(line, message)`.
pub(crate) fn open_csv<R: BufRead>(
    src: R,
    schema: &mut Schema,
    default_ty: Sym,
    max_line: usize,
) -> Result<CsvState<R>, (u64, String)> {
    let mut records = CsvRecords::new(src, 0, 0, max_line);
    let header = records.next(|bytes, cells, line, open| {
        if open {
            return Err((line, format!("unterminated quoted field in column {} of the header", cells.len())));
        }
        let cells: Vec<&[u8]> = cells.iter().map(|&(a, b)| &bytes[a..b]).collect();
        header_columns(&cells, line, schema)
    });
    let header = match header {
        Ok(h) => h,
        Err(RecordError::Fatal(line, message)) => return Err((line, message)),
        Err(RecordError::TooLong(line)) => return Err((line, too_long_message(max_line))),
    };
    let Some(columns) = header else {
        return Err((1, "empty input: expected a CSV header with a `ts` column".to_owned()));
    };
    let (cols, names) = columns?;
    if !names.iter().any(|n| &**n == "type") {
        schema.declare_type(default_ty);
        schema.set_complete(true);
        schema.close_types();
    }
    Ok(CsvState { records, cols, names, simple: true })
}

/// The columns a header's cells name, registered in `schema` (whose field
/// set is then closed).
pub(crate) fn header_columns(cells: &[&[u8]], line: u64, schema: &mut Schema) -> Result<Columns, records::Fatal> {
    // `ColName`s, not `&str`s, so that comparing them is counted in tests.
    let mut names: Vec<ColName<'_>> = Vec::with_capacity(cells.len());
    // The names so far, to find a duplicate with one look-up per column: a
    // scan of the names before each column made the header quadratic (a
    // header of 100,000 columns took 14 s).
    let mut seen: AHashSet<ColName<'_>> = AHashSet::with_capacity(cells.len());
    for (i, &cell) in cells.iter().enumerate() {
        let cell = if i == 0 { cell.strip_prefix(BOM).unwrap_or(cell) } else { cell };
        let Ok(name) = std::str::from_utf8(cell) else {
            return Err((line, format!("invalid UTF-8 in the name of column {}", i + 1)));
        };
        let name = name.trim();
        if name.is_empty() {
            return Err((line, format!("column {} of the header has an empty name", i + 1)));
        }
        if !seen.insert(ColName(name)) {
            return Err((line, format!("duplicate column `{name}` in the header")));
        }
        names.push(ColName(name));
    }
    if !seen.contains(&ColName("ts")) {
        return Err((line, no_ts_message(&names)));
    }
    let mut cols = Vec::with_capacity(names.len());
    let mut col_names = Vec::with_capacity(names.len());
    for &ColName(name) in &names {
        cols.push(match name {
            "ts" => Col::Ts,
            "type" => Col::Type,
            _ => Col::Field(schema.field(name)),
        });
        col_names.push(name.to_owned().into_boxed_str());
    }
    schema.close_fields();
    Ok((cols, col_names))
}

/// Header names listed at most in the message for a header without `ts`.
pub(crate) const SHOW_MAX_NAMES: usize = 8;

/// The message for a header without a `ts` column: the names it has (the
/// first few, each cut short: a header of 100,000 columns is not a
/// message), and a hint when it looks like JSON lines read as CSV.
#[cold]
pub(crate) fn no_ts_message(names: &[ColName<'_>]) -> String {
    let mut found =
        names.iter().take(SHOW_MAX_NAMES).map(|n| format!("`{}`", show(n.0.as_bytes()))).collect::<Vec<_>>();
    if names.len() > SHOW_MAX_NAMES {
        found.push(format!("and {} more", names.len() - SHOW_MAX_NAMES));
    }
    let mut message = format!("the header has no `ts` column (found {})", found.join(", "));
    if names.first().is_some_and(|n| n.0.starts_with('{')) {
        message.push_str("; the input looks like JSON lines: give it the `.jsonl` extension or `--format jsonl`");
    }
    message
}

/// A header name in the set of names seen, compared by its text. A type of
/// its own so that the tests can count the comparisons a header costs
/// (`tests::NAME_COMPARES`): a regression to a scan per column shows as
/// a count, not as a slow test.
#[derive(Hash)]
pub(crate) struct ColName<'a>(&'a str);

impl PartialEq for ColName<'_> {
    fn eq(&self, other: &Self) -> bool {
        #[cfg(test)]
        tests::NAME_COMPARES.with(|n| n.set(n.get() + 1));
        self.0 == other.0
    }
}

impl Eq for ColName<'_> {}

/// What each column holds, and its name.
pub(crate) type Columns = (Vec<Col>, Vec<Box<str>>);

#[derive(Clone, Copy)]
pub(crate) enum Col {
    Ts,
    Type,
    Field(FieldId),
    /// A field not kept ([`Reader::keep_fields`]): its cell is only checked.
    Skip,
}
