//! JSON in a query parameter: a list or a map does not fit one `key=value`, so the wire
//! carries its JSON text there (`args=["-l"]`, `metadata={"owner":"me"}`), as Docker's API
//! carries `filters`. One reading of that text for every such field; elsewhere (a plugin's
//! JSON params) the same field may be the value itself.

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// For `#[serde(with = "json_text")]` on an `Option<T>` query field: `Some(value)` from the
/// text, written back as text.
pub fn serialize<T: Serialize, S: Serializer>(
    value: &Option<T>,
    out: S,
) -> Result<S::Ok, S::Error> {
    match value {
        Some(value) => {
            let text = serde_json::to_string(value).map_err(serde::ser::Error::custom)?;
            out.serialize_some(&text)
        }
        None => out.serialize_none(),
    }
}

pub fn deserialize<'de, T: DeserializeOwned, D: Deserializer<'de>>(
    input: D,
) -> Result<Option<T>, D::Error> {
    match Option::<String>::deserialize(input)? {
        Some(text) => parse(&text).map(Some).map_err(D::Error::custom),
        None => Ok(None),
    }
}

/// A `T` given as itself (a JSON body's field) or as its JSON text (a query's value).
pub fn value_or_text<'de, T: DeserializeOwned, D: Deserializer<'de>>(
    input: D,
) -> Result<T, D::Error> {
    match serde_json::Value::deserialize(input)? {
        serde_json::Value::String(text) => parse(&text),
        value => serde_json::from_value(value).map_err(|e| e.to_string()),
    }
    .map_err(D::Error::custom)
}

fn parse<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    serde_json::from_str(text).map_err(|e| format!("is not the JSON it should be ({e})"))
}
