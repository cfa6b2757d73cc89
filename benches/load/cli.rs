//! The value parsers the programs' command lines share (clap's `value_parser`), each with the
//! message a bad value gets, and the command lines of the programs they start.

use std::ffi::OsStr;
use std::process::Command;
use std::str::FromStr;
use std::time::Duration;

/// Seconds, fractions allowed (`--duration 0.5`).
pub(crate) fn seconds(value: &str) -> Result<Duration, String> {
    value
        .trim()
        .parse::<f64>()
        .ok()
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .ok_or_else(|| "seconds, 0 or more".to_owned())
}

/// A value of type `T`, white space around it allowed (`--concurrency "1, 16"`).
pub(crate) fn trimmed<T: FromStr>(value: &str) -> Result<T, String> {
    value
        .trim()
        .parse()
        .map_err(|_| format!("{value:?} is not a {}", std::any::type_name::<T>()))
}

/// `NAME=PID`: a process reported apart, under its name.
pub(crate) fn named_pid(value: &str) -> Result<(String, u32), String> {
    let (name, pid) = value.split_once('=').ok_or_else(|| "NAME=PID".to_owned())?;
    let pid = pid.parse().map_err(|_| format!("{pid:?} is not a PID"))?;
    Ok((name.to_owned(), pid))
}

/// A command running `program` with none of the `MCP_*` variables of this process's
/// environment, which the examples (the echo server) read as flags, nor OpenTelemetry's
/// `OTEL_*`, which would install an exporter in the echo server or the gateway: what a program
/// the benchmark starts runs with is what its command line (and the suite) says.
pub(crate) fn command(program: impl AsRef<OsStr>) -> Command {
    let mut command = Command::new(program);
    for (name, _) in std::env::vars_os() {
        let name_text = name.to_string_lossy();
        if name_text.starts_with("MCP_") || name_text.starts_with("OTEL_") {
            command.env_remove(name);
        }
    }
    command
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_take_fractions_and_refuse_the_rest() {
        assert_eq!(seconds("0.5"), Ok(Duration::from_millis(500)));
        assert_eq!(seconds("5"), Ok(Duration::from_secs(5)));
        assert!(seconds("-1").is_err());
        assert!(seconds("soon").is_err());
    }

    #[test]
    fn named_pids_need_both_halves() {
        assert_eq!(named_pid("redis=42"), Ok(("redis".to_owned(), 42)));
        assert!(named_pid("redis").is_err());
        assert!(named_pid("redis=x").is_err());
        assert_eq!(trimmed::<usize>(" 16"), Ok(16));
        assert!(trimmed::<usize>("").is_err());
    }
}
