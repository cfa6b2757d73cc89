//! `[--list] [FILTER]...`: the arguments of the commands that run a list of named cases
//! (`cargo xtask interop`, `cargo xtask conformance`).

use crate::UsageError;

/// Which cases to run, or to list.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Selection {
    /// Run only the cases whose names contain one of these; all when empty.
    pub(crate) filters: Vec<String>,
    /// Print the selected cases instead of running them.
    pub(crate) list: bool,
}

impl Selection {
    /// Parses the arguments of `cargo xtask COMMAND`.
    pub(crate) fn parse(args: &[String], command: &str) -> Result<Selection, UsageError> {
        let mut selection = Selection::default();
        for arg in args {
            match arg.as_str() {
                "--list" => selection.list = true,
                _ if arg.starts_with('-') => {
                    return Err(UsageError::new(format!(
                        "unknown option '{arg}' for {command}"
                    )));
                }
                _ => selection.filters.push(arg.clone()),
            }
        }
        Ok(selection)
    }

    /// Whether the case named `name` is selected.
    pub(crate) fn selects(&self, name: &str) -> bool {
        self.filters.is_empty() || self.filters.iter().any(|f| name.contains(f.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn filters_match_parts_of_names_and_options_are_checked() {
        let selection = Selection::parse(&args("--list json py"), "interop").unwrap();
        assert!(selection.list);
        assert!(selection.selects("py-client -> echo_server (full)"));
        assert!(selection.selects("ts-client -> echo_server --json-response (json)"));
        assert!(!selection.selects("ts-client -> echo_server (full)"));
        assert!(
            Selection::parse(&[], "interop")
                .unwrap()
                .selects("anything")
        );
        let error = Selection::parse(&args("--fast"), "conformance").unwrap_err();
        assert_eq!(error.message, "unknown option '--fast' for conformance");
    }
}
