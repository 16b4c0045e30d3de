//! The `cep` binary: see the crate documentation of `cep_cli`.

fn main() -> std::process::ExitCode {
    cep_cli::main_with(std::env::args_os())
}
