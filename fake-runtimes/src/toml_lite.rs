//! Just enough TOML to read codex `-c key=value` overrides: strings,
//! numbers, booleans, arrays and inline tables. Codex falls back to the raw
//! string when a value is not TOML, and so does [`parse_value`].

use serde_json::{Map, Value};

/// Parses a TOML value, or returns the input as a string like codex does.
pub fn parse_value(text: &str) -> Value {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
    };
    match p.value() {
        Some(v) if p.at_end() => v,
        _ => Value::String(text.to_string()),
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn at_end(&mut self) -> bool {
        self.ws();
        self.i == self.s.len()
    }

    fn eat(&mut self, b: u8) -> bool {
        self.ws();
        if self.peek() == Some(b) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn value(&mut self) -> Option<Value> {
        self.ws();
        match self.peek()? {
            b'"' => self.basic_string().map(Value::String),
            b'\'' => self.literal_string().map(Value::String),
            b'[' => self.array(),
            b'{' => self.table(),
            _ => self.scalar(),
        }
    }

    fn basic_string(&mut self) -> Option<String> {
        self.i += 1;
        let mut out = Vec::new();
        loop {
            let b = self.peek()?;
            self.i += 1;
            match b {
                b'"' => return String::from_utf8(out).ok(),
                b'\\' => {
                    let e = self.peek()?;
                    self.i += 1;
                    match e {
                        b'n' => out.push(b'\n'),
                        b't' => out.push(b'\t'),
                        b'r' => out.push(b'\r'),
                        b'"' | b'\\' => out.push(e),
                        b'u' => {
                            let hex = std::str::from_utf8(self.s.get(self.i..self.i + 4)?).ok()?;
                            let c = char::from_u32(u32::from_str_radix(hex, 16).ok()?)?;
                            self.i += 4;
                            out.extend_from_slice(c.to_string().as_bytes());
                        }
                        _ => return None,
                    }
                }
                _ => out.push(b),
            }
        }
    }

    fn literal_string(&mut self) -> Option<String> {
        self.i += 1;
        let start = self.i;
        while self.peek()? != b'\'' {
            self.i += 1;
        }
        let s = std::str::from_utf8(&self.s[start..self.i])
            .ok()?
            .to_string();
        self.i += 1;
        Some(s)
    }

    fn array(&mut self) -> Option<Value> {
        self.i += 1;
        let mut items = Vec::new();
        loop {
            if self.eat(b']') {
                return Some(Value::Array(items));
            }
            items.push(self.value()?);
            if !self.eat(b',') {
                return self.eat(b']').then_some(Value::Array(items));
            }
        }
    }

    fn key(&mut self) -> Option<String> {
        self.ws();
        match self.peek()? {
            b'"' => self.basic_string(),
            b'\'' => self.literal_string(),
            _ => {
                let start = self.i;
                while matches!(self.peek(), Some(b) if b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
                {
                    self.i += 1;
                }
                (self.i > start)
                    .then(|| String::from_utf8_lossy(&self.s[start..self.i]).into_owned())
            }
        }
    }

    fn table(&mut self) -> Option<Value> {
        self.i += 1;
        let mut map = Map::new();
        if self.eat(b'}') {
            return Some(Value::Object(map));
        }
        loop {
            let k = self.key()?;
            if !self.eat(b'=') {
                return None;
            }
            let v = self.value()?;
            map.insert(k, v);
            if self.eat(b'}') {
                return Some(Value::Object(map));
            }
            if !self.eat(b',') {
                return None;
            }
        }
    }

    fn scalar(&mut self) -> Option<Value> {
        let start = self.i;
        while matches!(self.peek(), Some(b) if !matches!(b, b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.i += 1;
        }
        let word = std::str::from_utf8(&self.s[start..self.i]).ok()?;
        match word {
            "true" => Some(Value::Bool(true)),
            "false" => Some(Value::Bool(false)),
            _ => {
                let clean = word.replace('_', "");
                if let Ok(n) = clean.parse::<i64>() {
                    Some(Value::from(n))
                } else if clean.contains(['.', 'e', 'E']) {
                    clean
                        .parse::<f64>()
                        .ok()
                        .and_then(serde_json::Number::from_f64)
                        .map(Value::Number)
                } else {
                    None
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_codex_style_values() {
        assert_eq!(parse_value("\"o3\""), json!("o3"));
        assert_eq!(parse_value("o3"), json!("o3"));
        assert_eq!(
            parse_value("http://127.0.0.1:9/mcp"),
            json!("http://127.0.0.1:9/mcp")
        );
        assert_eq!(parse_value("42"), json!(42));
        assert_eq!(parse_value("true"), json!(true));
        assert_eq!(parse_value("['a', \"b\"]"), json!(["a", "b"]));
        assert_eq!(
            parse_value(r#"{url = "http://x/mcp", http_headers = { "X-A" = "1" }}"#),
            json!({"url": "http://x/mcp", "http_headers": {"X-A": "1"}})
        );
        assert_eq!(parse_value("{broken"), json!("{broken"));
    }
}
