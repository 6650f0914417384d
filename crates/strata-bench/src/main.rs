//! `strata-bench` binary: parses the command line and hands over to
//! [`strata_bench::cli_main`].

fn main() -> std::process::ExitCode {
    strata_bench::cli_main(std::env::args_os())
}
