//! A code-interpreter cell: the Python that runs it in a context (Jupyter's rule for the
//! last expression, IPython's rich reprs, `display`, matplotlib figures), and the reading
//! of its stdout as it streams, where that Python writes results and errors after a marker
//! new for every run.

use base64::Engine as _;
use serde_json::{Value, json};

/// The support of Python cells, made once per interpreter as the module `__e2b__`:
/// `cell` runs a cell in the context's namespace, then evaluates its last expression and
/// writes its formats (IPython's rich repr protocol: `_repr_html_`, `_repr_png_`,
/// `_repr_mimebundle_`...; `text` is always its `repr`) after the marker, or the error;
/// `display(obj)` (a builtin, as in Jupyter) writes an object's formats at once; figures
/// of matplotlib, when the code uses it, are drawn by the Agg renderer and written as
/// PNG when shown (`plt.show()`) and when the cell ends with them open. What follows the
/// marker on its line is `<kind> <JSON>`, kind `result`, `display` or `error`.
const PYTHON_SUPPORT: &str = include_str!("cell_support.py");

/// The cell that makes the support once per interpreter (an `exec` of it as a module
/// kept in `sys.modules`) and runs `source` there.
const PYTHON_CELL: &str = r#"import sys as __e2b_sys
if "__e2b__" not in __e2b_sys.modules:
    __e2b_module = type(__e2b_sys)("__e2b__")
    exec(compile(__E2B_SUPPORT__, "<e2b>", "exec"), __e2b_module.__dict__)
    __e2b_sys.modules["__e2b__"] = __e2b_module
    del __e2b_module
__e2b_sys.modules["__e2b__"].cell(__E2B_MARKER__, __E2B_SOURCE__, globals())
del __e2b_sys
"#;

/// The keys of a result line the SDKs read (`Result` of `e2b-code-interpreter`).
const RESULT_KEYS: &[&str] = &[
    "text",
    "html",
    "markdown",
    "svg",
    "png",
    "jpeg",
    "pdf",
    "latex",
    "json",
    "javascript",
    "data",
    "chart",
    "extra",
];

/// The Python cell that runs `source` and writes its last expression's value after `marker`.
pub(super) fn python_cell(marker: &str, source: &str) -> String {
    let b64 = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
    // Each a Python literal as written: base64 and the marker hold no quotes, backslashes
    // nor line ends (the marker's control character stands as itself in a literal).
    PYTHON_CELL
        .replace(
            "__E2B_SUPPORT__",
            &format!(
                "__import__(\"base64\").b64decode(\"{}\").decode()",
                b64(PYTHON_SUPPORT)
            ),
        )
        .replace("__E2B_MARKER__", &format!("\"{marker}\""))
        .replace("__E2B_SOURCE__", &format!("\"{}\"", b64(source)))
}

/// A piece of a run's stdout: output, or what followed the marker on a marked line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Piece {
    Output(String),
    Marked(String),
}

/// A run's stdout as it streams, split from the marked lines: the marker ends its line but
/// may follow output that did not (`print(x, end="")`), and may come cut across chunks, so
/// the end of a chunk that could begin it is held back until the next one tells.
pub(super) struct Marked {
    marker: String,
    pending: String,
}

impl Marked {
    pub(super) fn new(marker: &str) -> Marked {
        Marked {
            marker: marker.to_owned(),
            pending: String::new(),
        }
    }

    /// What of `chunk` (after what was held back) is output, and what followed the marker
    /// on each marked line it completed, in the order they came.
    pub(super) fn push(&mut self, chunk: &str) -> Vec<Piece> {
        self.pending.push_str(chunk);
        let mut pieces = Vec::new();
        let out = |pieces: &mut Vec<Piece>, text: &str| {
            if !text.is_empty() {
                pieces.push(Piece::Output(text.to_owned()));
            }
        };
        loop {
            match self.pending.find(&self.marker) {
                Some(at) => {
                    let rest = at + self.marker.len();
                    let Some(end) = self.pending[rest..].find('\n') else {
                        // The marked line is not whole yet.
                        out(&mut pieces, &self.pending[..at]);
                        self.pending.drain(..at);
                        return pieces;
                    };
                    out(&mut pieces, &self.pending[..at]);
                    let found = self.pending[rest..rest + end].trim().to_owned();
                    pieces.push(Piece::Marked(found));
                    self.pending.drain(..rest + end + 1);
                }
                None => {
                    let keep = (1..self.marker.len().min(self.pending.len() + 1))
                        .rev()
                        .find(|k| {
                            let from = self.pending.len() - k;
                            self.pending.is_char_boundary(from)
                                && self.marker.starts_with(&self.pending[from..])
                        })
                        .unwrap_or(0);
                    let upto = self.pending.len() - keep;
                    out(&mut pieces, &self.pending[..upto]);
                    self.pending.drain(..upto);
                    return pieces;
                }
            }
        }
    }

    /// What was held back at the end of the run: a marked line cut short by the end
    /// (the interpreter died) is dropped, anything else is output.
    pub(super) fn finish(&mut self) -> String {
        let rest = std::mem::take(&mut self.pending);
        if rest.starts_with(&self.marker) {
            String::new()
        } else {
            rest
        }
    }
}

/// The JSON line of what followed the marker: a result (the main one, or one `display`
/// gave), or the cell's error.
pub(super) fn marked_line(found: &str) -> Option<Value> {
    let (kind, payload) = found.split_once(' ')?;
    let payload: Value = serde_json::from_str(payload).ok()?;
    match kind {
        "result" | "display" => {
            let mut line = serde_json::Map::new();
            line.insert("type".into(), json!("result"));
            if let Value::Object(formats) = payload {
                for (key, value) in formats {
                    if RESULT_KEYS.contains(&key.as_str()) && !value.is_null() {
                        line.insert(key, value);
                    }
                }
            }
            line.insert("is_main_result".into(), json!(kind == "result"));
            Some(Value::Object(line))
        }
        "error" => {
            let mut error = payload;
            error["type"] = json!("error");
            Some(error)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `chunks` fed to a [`Marked`]: the output and the marked lines.
    fn fed(chunks: &[&str], marker: &str) -> (String, Vec<String>) {
        let mut marked = Marked::new(marker);
        let (mut stdout, mut found) = (String::new(), Vec::new());
        for chunk in chunks {
            for piece in marked.push(chunk) {
                match piece {
                    Piece::Output(out) => stdout.push_str(&out),
                    Piece::Marked(more) => found.push(more),
                }
            }
        }
        stdout.push_str(&marked.finish());
        (stdout, found)
    }

    /// The text of the output pieces of one push.
    fn output(pieces: Vec<Piece>) -> String {
        pieces
            .into_iter()
            .filter_map(|p| match p {
                Piece::Output(out) => Some(out),
                Piece::Marked(_) => None,
            })
            .collect()
    }

    #[test]
    fn pieces_keep_their_order_within_a_chunk() {
        let mut marked = Marked::new("MK");
        let pieces = marked.push("a\nMK display {}\nb\nMK result {}\nc");
        let want = [
            Piece::Output("a\n".into()),
            Piece::Marked("display {}".into()),
            Piece::Output("b\n".into()),
            Piece::Marked("result {}".into()),
            Piece::Output("c".into()),
        ];
        assert_eq!(pieces, want);
    }

    #[test]
    fn the_marker_is_found_after_output_without_a_final_newline() {
        let (stdout, found) = fed(&["a\nxMK result \"1\"\nb"], "MK");
        assert_eq!(stdout, "a\nxb");
        assert_eq!(found, vec!["result \"1\"".to_owned()]);
        let (stdout, found) = fed(&["plain\n"], "MK");
        assert_eq!((stdout.as_str(), found.len()), ("plain\n", 0));
    }

    #[test]
    fn a_marker_cut_across_chunks_never_leaks_into_stdout() {
        let whole =
            "out é\nmore e2b-MARK display {\"text\":\"1\"}\ntail e2\ne2b-MARK result {}\nend";
        // Every place the stream could be cut, in two and in three.
        for i in (0..=whole.len()).filter(|i| whole.is_char_boundary(*i)) {
            for j in (i..=whole.len()).filter(|j| whole.is_char_boundary(*j)) {
                let (stdout, found) = fed(&[&whole[..i], &whole[i..j], &whole[j..]], "e2b-MARK");
                assert_eq!(stdout, "out é\nmore tail e2\nend", "cut at {i}, {j}");
                assert_eq!(
                    found,
                    ["display {\"text\":\"1\"}", "result {}"],
                    "cut at {i}, {j}"
                );
            }
        }
        // Output that only looks like the marker's start is output once it cannot be.
        let mut marked = Marked::new("e2b-MARK");
        assert_eq!(output(marked.push("x e2b-MA")), "x ");
        assert_eq!(output(marked.push("NY\n")), "e2b-MANY\n");
        assert_eq!(output(marked.push("e2b")), "");
        assert_eq!(marked.finish(), "e2b");
    }

    #[test]
    fn marked_lines_become_result_and_error_lines_with_the_keys_the_sdk_reads() {
        let main = marked_line(
            r#"result {"text": "1", "html": "<b>1</b>", "png": "iVBO", "nope": 3, "json": null}"#,
        )
        .unwrap();
        assert_eq!(
            main,
            json!({"type": "result", "text": "1", "html": "<b>1</b>", "png": "iVBO", "is_main_result": true})
        );
        let shown = marked_line(r#"display {"text": "x"}"#).unwrap();
        assert_eq!(shown["is_main_result"], false);
        let error = marked_line(r#"error {"name": "E", "value": "v", "traceback": "t"}"#).unwrap();
        assert_eq!(
            error,
            json!({"type": "error", "name": "E", "value": "v", "traceback": "t"})
        );
        assert_eq!(marked_line("result not json"), None);
    }
}
