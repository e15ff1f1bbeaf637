//! The `RT_FAKE_SCRIPT` file: either a step list used for every turn, or
//! `{"turns": [[...], [...]]}` with one list per turn of the conversation.

use super::{Step, parse_steps};
use serde_json::Value;
use std::path::Path;

#[derive(Debug, Clone, PartialEq)]
pub enum ScriptFile {
    EveryTurn(Vec<Step>),
    PerTurn(Vec<Vec<Step>>),
}

impl ScriptFile {
    /// Loads the file named by `RT_FAKE_SCRIPT`, if set.
    pub fn from_env() -> Result<Option<ScriptFile>, String> {
        match crate::env::var(crate::env::SCRIPT) {
            None => Ok(None),
            Some(path) => ScriptFile::load(Path::new(&path)).map(Some),
        }
    }

    pub fn load(path: &Path) -> Result<ScriptFile, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read script {}: {e}", path.display()))?;
        let value: Value = serde_json::from_str(&text)
            .map_err(|e| format!("script {} is not valid JSON: {e}", path.display()))?;
        ScriptFile::from_value(&value).map_err(|e| format!("script {}: {e}", path.display()))
    }

    pub fn from_value(value: &Value) -> Result<ScriptFile, String> {
        if value.is_array() {
            return parse_steps(value).map(ScriptFile::EveryTurn);
        }
        if let Some(steps) = value.get("steps") {
            return parse_steps(steps).map(ScriptFile::EveryTurn);
        }
        if let Some(turns) = value.get("turns").and_then(Value::as_array) {
            return turns
                .iter()
                .enumerate()
                .map(|(i, t)| parse_steps(t).map_err(|e| format!("turn {}: {e}", i + 1)))
                .collect::<Result<_, _>>()
                .map(ScriptFile::PerTurn);
        }
        Err("expected a step array, {\"steps\": [...]} or {\"turns\": [[...], ...]}".to_string())
    }

    /// Steps for the 1-based `turn`; turns past the end of a per-turn script
    /// fall back to the default echo so long conversations keep working.
    pub fn for_turn(&self, turn: usize) -> Option<&[Step]> {
        match self {
            ScriptFile::EveryTurn(steps) => Some(steps),
            ScriptFile::PerTurn(turns) => turns.get(turn.checked_sub(1)?).map(Vec::as_slice),
        }
    }
}
