//! The `svc` binary: everything is in the library's command line module.

fn main() -> std::process::ExitCode {
    svc::cli::main()
}
