//! The sections of `BENCHMARKS.md` written by hand (their heading says "written by hand"):
//! profiles, before-and-after tables, what a run could not show. A run of the suite writes
//! the file anew; these are carried over from the old one, each where it stood.

/// A section of a markdown text: its heading line (`## ` or `### `), or none for what comes
/// before the first, and its text, heading included.
#[derive(Debug, Clone, Copy)]
struct Section<'a> {
    heading: Option<&'a str>,
    text: &'a str,
}

/// `text` cut at each line starting with `## ` or `### `.
fn sections(text: &str) -> Vec<Section<'_>> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut heading = None;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        if line.starts_with("## ") || line.starts_with("### ") {
            if at > start || heading.is_some() {
                out.push(Section {
                    heading,
                    text: &text[start..at],
                });
            }
            start = at;
            heading = Some(line.trim_end());
        }
        at += line.len();
    }
    out.push(Section {
        heading,
        text: &text[start..],
    });
    out
}

/// Whether a heading names a section written by hand.
fn by_hand(heading: &str) -> bool {
    heading.contains("written by hand")
}

/// `new` with every section of `old` written by hand that `new` lacks, each placed after the
/// section that preceded it in `old` (the nearest one `new` has), or at the end.
pub(crate) fn carry_over(old: &str, new: &str) -> String {
    let mut out: Vec<Section<'_>> = sections(new);
    let mut after: Option<&str> = None;
    for section in sections(old) {
        let Some(heading) = section.heading else {
            continue;
        };
        let present = out.iter().position(|s| s.heading == Some(heading));
        if let Some(at) = present {
            after = out[at].heading;
            continue;
        }
        if !by_hand(heading) {
            continue;
        }
        let at = after
            .and_then(|h| out.iter().position(|s| s.heading == Some(h)))
            .map_or(out.len(), |i| i + 1);
        out.insert(at, section);
        after = Some(heading);
    }
    let mut text = String::with_capacity(old.len().max(new.len()));
    for section in out {
        if !text.is_empty() && !text.ends_with("\n\n") {
            text.push_str(if text.ends_with('\n') { "\n" } else { "\n\n" });
        }
        text.push_str(section.text);
    }
    text.truncate(text.trim_end().len());
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str = "# B\n\nold run\n\n## A\n\na old\n\n## H1 (written by hand)\n\nh1\n\n\
                       ## C\n\nc old\n\n### C1\n\nc1 old\n\n### C2 (written by hand)\n\nc2\n\n\
                       ## Gone (written by hand)\n\nlast\n";

    #[test]
    fn sections_by_hand_keep_their_place_after_what_preceded_them() {
        let new = "# B\n\nnew run\n\n## A\n\na new\n\n## C\n\nc new\n\n### C1\n\nc1 new\n";
        let carried = carry_over(OLD, new);
        assert_eq!(
            carried,
            "# B\n\nnew run\n\n## A\n\na new\n\n## H1 (written by hand)\n\nh1\n\n## C\n\nc new\n\n\
             ### C1\n\nc1 new\n\n### C2 (written by hand)\n\nc2\n\n\
             ## Gone (written by hand)\n\nlast\n"
        );
    }

    #[test]
    fn a_section_the_new_text_has_is_not_doubled_and_generated_ones_are_not_carried() {
        let new = "# B\n\n## H1 (written by hand)\n\nh1 new\n";
        let carried = carry_over(OLD, new);
        assert_eq!(carried.matches("## H1").count(), 1, "{carried}");
        assert!(
            carried.contains("h1 new") && !carried.contains("\nh1\n"),
            "{carried}"
        );
        assert!(
            !carried.contains("a old") && !carried.contains("c old"),
            "{carried}"
        );
        // Their predecessors are missing from the new text: at the end, in their order.
        assert!(
            carried
                .ends_with("### C2 (written by hand)\n\nc2\n\n## Gone (written by hand)\n\nlast\n"),
            "{carried}"
        );
    }

    #[test]
    fn a_text_without_sections_by_hand_is_the_new_one() {
        let new = "# B\n\n## A\n\nx\n";
        assert_eq!(carry_over("# B\n\n## A\n\ny\n", new), new);
    }
}
