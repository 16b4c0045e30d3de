#![doc = include_str!("../README.md")]

pub mod baseline;
pub mod levels;
pub mod suite;
pub mod typed;
pub mod w1;
pub mod w2;
pub mod w3;
pub mod w4;
pub mod w7;
/// The line the examples end with: the median of `rates` (events/s, one
/// per run) with its min and max, in M events/s.
///
/// # Examples
/// ```
/// let line = cep_bench::median_line(&mut [3e6, 1e6, 2e6]);
/// assert_eq!(line, "median 2.00 M events/s (min 1.00, max 3.00) over 3 runs");
/// ```
pub fn median_line(rates: &mut [f64]) -> String {
    rates.sort_by(f64::total_cmp);
    let n = rates.len();
    if n == 0 {
        return "no runs".into();
    }
    format!(
        "median {:.2} M events/s (min {:.2}, max {:.2}) over {n} runs",
        rates[n / 2] / 1e6,
        rates[0] / 1e6,
        rates[n - 1] / 1e6
    )
}

// The one module with `unsafe` code: the counting `GlobalAlloc` (each block
// forwards to `System`). The crate denies `unsafe_code` everywhere else.
#[allow(unsafe_code)]
pub mod alloc;
