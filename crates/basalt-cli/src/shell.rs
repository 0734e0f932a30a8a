//! `basalt shell`: the HBase shell, against a running server or a data
//! directory no server holds.

use std::cell::RefCell;
use std::io::{BufRead, IsTerminal};
use std::path::PathBuf;
use std::process::ExitCode;
use std::rc::Rc;

use basalt_shell::{interactive, EmbeddedBackend, RemoteBackend, SharedBackend, Shell};

#[derive(Debug, clap::Args)]
pub(crate) struct ShellArgs {
    /// Server to connect to.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Its Thrift port.
    #[arg(long, default_value_t = 9090)]
    port: u16,
    /// Open this data directory directly instead of connecting to a server
    /// (only when no server holds it).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["host", "port"])]
    data_dir: Option<PathBuf>,
    /// Run these commands (separated by ';' or newlines) and exit.
    #[arg(short = 'e', long = "execute", value_name = "COMMANDS")]
    execute: Option<String>,
    /// In scripts, go on after an error (the exit status still reports it).
    #[arg(long)]
    keep_going: bool,
    /// In scripts, print each input line as `> line` before its output.
    #[arg(long)]
    echo: bool,
    /// Kerberos (Thrift's SASL GSSAPI): the server's Thrift principal;
    /// `_HOST` is --host.
    #[command(flatten)]
    kerberos: crate::kerberos_args::KerberosClientArgs,
    /// A script file of commands to run, then exit. Without -e or a script,
    /// commands come from standard input when it is not a terminal, and the
    /// shell is interactive when it is.
    #[arg(value_name = "SCRIPT")]
    script: Option<PathBuf>,
}

/// The Kerberos settings `--kerberos-principal` asks for.
fn kerberos(args: &ShellArgs) -> Result<Option<basalt_thrift::client::KerberosClient>, String> {
    Ok(args.kerberos.settings()?.map(|(principal, protection)| {
        basalt_thrift::client::KerberosClient {
            server_principal: basalt_kerberos::substitute_host(&principal, &args.host),
            client_principal: None,
            protection,
        }
    }))
}

pub(crate) fn run(args: ShellArgs) -> ExitCode {
    let backend: SharedBackend = match &args.data_dir {
        Some(dir) => match EmbeddedBackend::open(dir) {
            Ok(b) => Rc::new(RefCell::new(b)),
            Err(e) => return fail(&format!("cannot open {}: {e}", dir.display())),
        },
        None => match kerberos(&args).and_then(|kerberos| {
            RemoteBackend::connect_as(&args.host, args.port, kerberos).map_err(|e| e.to_string())
        }) {
            Ok(b) => Rc::new(RefCell::new(b)),
            Err(e) => return fail(&e.to_string()),
        },
    };
    let location = backend.borrow().describe_location();
    let mut shell = Shell::new(backend, Box::new(std::io::stdout()));
    shell.set_echo(args.echo);
    let script = if let Some(commands) = args.execute {
        Some(commands)
    } else if let Some(path) = &args.script {
        match std::fs::read_to_string(path) {
            Ok(s) => Some(s),
            Err(e) => return fail(&format!("cannot read {}: {e}", path.display())),
        }
    } else {
        None
    };
    let ok = match script {
        Some(script) => shell.run_script(&script, args.keep_going),
        None if !std::io::stdin().is_terminal() => {
            shell.run_lines(std::io::stdin().lock().lines(), args.keep_going)
        }
        None => {
            let banner = format!("Basalt shell {} on {location}", env!("CARGO_PKG_VERSION"));
            match interactive::run(&mut shell, &banner) {
                Ok(()) => true,
                Err(e) => return fail(&format!("terminal error: {e}")),
            }
        }
    };
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn fail(message: &str) -> ExitCode {
    eprintln!("basalt shell: {message}");
    ExitCode::FAILURE
}
