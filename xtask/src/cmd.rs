//! Running cargo and other programs: echo the command line, inherit the output, check the status;
//! building an example and finding the target directory.

use std::{
    ffi::OsString,
    path::PathBuf,
    process::{Command, Stdio},
};

use anyhow::{Context, Result, bail};

/// A `cargo` command run at the workspace root with the cargo that runs xtask (`CARGO`), so that
/// a `cargo +nightly xtask` stays on nightly.
///
/// Without incremental compilation: xtask builds once and runs, and the incremental caches of
/// a whole CI run took 5.7 GiB of its disk for nothing. Every xtask cargo command sets it the
/// same way, so that one step's build is reused by the next.
pub(crate) fn cargo(args: &[&str]) -> Command {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
    let mut command = Command::new(cargo);
    command
        .args(args)
        .current_dir(crate::project_root())
        .env("CARGO_INCREMENTAL", "0");
    command
}

/// Runs `command` with the terminal's stdin, stdout and stderr, so that its output (and
/// `CARGO_TERM_COLOR`) reach the CI log unchanged. Fails with `exit status N` if it fails.
pub(crate) fn run(command: &mut Command) -> Result<()> {
    let line = display(command);
    eprintln!("xtask: $ {line}");
    let status = command
        .status()
        .with_context(|| format!("could not run `{line}`"))?;
    if status.success() {
        return Ok(());
    }
    match status.code() {
        Some(code) => bail!("exit status {code}"),
        // Killed by a signal: the status says which.
        None => bail!("{status}"),
    }
}

/// Runs `command` quietly and returns its stdout; if it fails, the error holds its stderr.
pub(crate) fn output(command: &mut Command) -> Result<String> {
    let line = display(command);
    let output = command
        .output()
        .with_context(|| format!("could not run `{line}`"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        bail!("`{line}` failed ({}): {}", output.status, stderr.trim());
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// `cargo build --example NAME` with the cargo that runs xtask, and the executable it made.
pub(crate) fn build_example(name: &str) -> Result<PathBuf> {
    let mut build = cargo(&[
        "build",
        "--example",
        name,
        "--message-format=json-render-diagnostics",
    ]);
    eprintln!("xtask: $ cargo build --example {name}");
    // JSON on stdout, to find the executable; diagnostics and progress on the terminal.
    let output = build
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .output()
        .context("could not run cargo")?;
    if !output.status.success() {
        bail!("cargo build --example {name} failed ({})", output.status);
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    stdout
        .lines()
        .filter(|line| line.contains("\"compiler-artifact\""))
        .filter(|line| json_string(line, "name").as_deref() == Some(name))
        .find_map(|line| json_string(line, "executable"))
        .map(PathBuf::from)
        .with_context(|| format!("cargo built no executable for the example {name}"))
}

/// The workspace's target directory, wherever `CARGO_TARGET_DIR` or a config put it.
pub(crate) fn target_dir() -> Result<PathBuf> {
    let metadata = output(&mut cargo(&[
        "metadata",
        "--format-version",
        "1",
        "--no-deps",
    ]))?;
    json_string(&metadata, "target_directory")
        .map(PathBuf::from)
        .context("cargo metadata named no target_directory")
}

/// The first string value of `"key": "..."` in a line of JSON, unescaped. Enough for cargo's
/// paths and names, without a JSON parser in xtask.
fn json_string(json: &str, key: &str) -> Option<String> {
    let pattern = format!("\"{key}\":\"");
    let start = json.find(&pattern)? + pattern.len();
    let mut value = String::new();
    let mut chars = json[start..].chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(value),
            '\\' => match chars.next()? {
                'n' => value.push('\n'),
                't' => value.push('\t'),
                other => value.push(other),
            },
            c => value.push(c),
        }
    }
    None
}

/// The command as a shell would show it: `NAME=value program args...`.
fn display(command: &Command) -> String {
    let mut words = Vec::new();
    for (name, value) in command.get_envs() {
        if let Some(value) = value {
            let value = value.to_string_lossy();
            words.push(format!("{}={}", name.to_string_lossy(), quote(&value)));
        }
    }
    let program = command.get_program().to_string_lossy();
    // `CARGO` is a full path; the program name is enough to read the log.
    let program = program
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or(&program)
        .to_string();
    words.push(program);
    words.extend(command.get_args().map(|arg| quote(&arg.to_string_lossy())));
    words.join(" ")
}

fn quote(word: &str) -> String {
    if word.is_empty() || word.contains([' ', '\'', '"', '\x1f']) {
        format!("'{word}'")
    } else {
        word.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_shows_environment_program_and_arguments() {
        let mut command = Command::new("/usr/bin/cargo");
        command
            .args(["doc", "--no-deps"])
            .env("RUSTDOCFLAGS", "-D warnings");
        assert_eq!(
            display(&command),
            "RUSTDOCFLAGS='-D warnings' cargo doc --no-deps"
        );
    }

    #[test]
    fn json_strings_are_found_and_unescaped() {
        let line = r#"{"reason":"compiler-artifact","target":{"name":"echo_server"},"executable":"/a \"b\"\\c"}"#;
        assert_eq!(json_string(line, "name").as_deref(), Some("echo_server"));
        assert_eq!(
            json_string(line, "executable").as_deref(),
            Some("/a \"b\"\\c")
        );
        assert_eq!(json_string(line, "missing"), None);
        assert_eq!(json_string(r#"{"name":"unterminated"#, "name"), None);
    }

    #[test]
    fn run_reports_the_exit_status() {
        // Cargo itself is the one program every machine that builds xtask has.
        let quiet = |args: &[&str]| {
            let mut command = cargo(args);
            command.stdout(Stdio::null()).stderr(Stdio::null());
            command
        };
        run(&mut quiet(&["--version"])).unwrap();
        assert!(
            output(&mut cargo(&["--version"]))
                .unwrap()
                .starts_with("cargo ")
        );
        let error = output(&mut cargo(&["xtask-no-such-subcommand"])).unwrap_err();
        assert!(error.to_string().contains("no such command"), "{error}");
        let error = run(&mut quiet(&["xtask-no-such-subcommand"])).unwrap_err();
        assert_eq!(error.to_string(), "exit status 101");
    }
}
