//! Variables for one run of a context: the frame's optional third field, which the driver
//! applies before the code and undoes after it, so they reach that run only (the code
//! interpreter's `env_vars`, E2B's rule). Python and Node read it as JSON and set their
//! process environment; a shell has no JSON, so it gets shell code that saves, exports and
//! leaves the undoing in `__svc_restore` for its driver to `eval`.

use super::Language;
use base64::Engine as _;
use std::collections::BTreeMap;

/// The third field of a frame for `env` in a context of `lang` (`None`: no variables).
/// The names must already be checked as variable names (letters, digits, `_`).
pub fn field(lang: &Language, env: &BTreeMap<String, String>) -> Option<String> {
    if env.is_empty() {
        return None;
    }
    let text = match lang.name {
        "bash" | "sh" => shell(env),
        _ => serde_json::to_string(env).unwrap_or_default(),
    };
    Some(base64::engine::general_purpose::STANDARD.encode(text))
}

/// Saves each variable's old value (or that it was unset) in a variable of its own and
/// appends its undoing to `__svc_restore`, then exports the new value.
fn shell(env: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    for (i, (name, value)) in env.iter().enumerate() {
        out.push_str(&format!(
            "if [ -n \"${{{name}+x}}\" ]; then __svc_old_{i}=${name}; \
             __svc_restore=\"$__svc_restore {name}=\\$__svc_old_{i}; unset __svc_old_{i};\"; \
             else __svc_restore=\"$__svc_restore unset {name};\"; fi\n\
             export {name}={}\n",
            quoted(value)
        ));
    }
    out
}

/// `value` in single quotes, its own single quotes closed, escaped and reopened.
fn quoted(value: &str) -> String {
    format!("'{}'", value.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shell_value_with_quotes_survives_the_quoting() {
        let env = BTreeMap::from([("A".to_owned(), "it's $HOME `x`".to_owned())]);
        let script = format!("{}printf '%s' \"$A\"", shell(&env));
        let out = std::process::Command::new("sh")
            .args(["-c", &script])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "it's $HOME `x`");
    }

    #[test]
    fn a_shell_run_restores_and_leaves_no_saved_copy() {
        let env = BTreeMap::from([("HOME".to_owned(), "/over".to_owned())]);
        let script = format!(
            "HOME=/was; __svc_restore=; {}printf '%s ' \"$HOME\"; eval \"$__svc_restore\"; \
             printf '%s %s' \"$HOME\" \"${{__svc_old_0-gone}}\"",
            shell(&env)
        );
        let out = std::process::Command::new("sh")
            .args(["-c", &script])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "/over /was gone");
    }

    #[test]
    fn no_variables_no_field() {
        let lang = super::super::language("python3").unwrap();
        assert_eq!(field(lang, &BTreeMap::new()), None);
    }
}
