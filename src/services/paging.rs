//! The list envelope and its paging rules (agents spec 2.3), shared by every list route.

use serde::Deserialize;
use serde_json::{Value, json};
use std::fmt;

/// A paging parameter that cannot be honoured; [`PagingError::param`] names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PagingError {
    /// `limit` is not an integer from 1 to 100 (as given).
    Limit(String),
    /// `order` is neither `asc` nor `desc` (as given).
    Order(String),
    /// `after` names an id that is not in the list.
    CursorNotFound(String),
}

impl PagingError {
    /// The query parameter at fault.
    pub fn param(&self) -> &'static str {
        match self {
            PagingError::Limit(_) => "limit",
            PagingError::Order(_) => "order",
            PagingError::CursorNotFound(_) => "after",
        }
    }
}

impl fmt::Display for PagingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PagingError::Limit(raw) => {
                write!(f, "`limit` must be an integer from 1 to 100, got `{raw}`")
            }
            PagingError::Order(raw) => write!(f, "`order` must be `asc` or `desc`, got `{raw}`"),
            PagingError::CursorNotFound(after) => {
                write!(f, "`after` names `{after}`, which is not in this list")
            }
        }
    }
}

impl std::error::Error for PagingError {}

#[derive(Debug, Default, Deserialize)]
pub struct PageQuery {
    pub limit: Option<String>,
    pub order: Option<String>,
    pub after: Option<String>,
}

pub struct Page {
    limit: usize,
    descending: bool,
    after: Option<String>,
}

impl PageQuery {
    pub fn page(&self) -> Result<Page, PagingError> {
        let limit = match &self.limit {
            None => 20,
            Some(raw) => raw
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=100).contains(n))
                .ok_or_else(|| PagingError::Limit(raw.clone()))?,
        };
        let descending = match self.order.as_deref() {
            None | Some("desc") => true,
            Some("asc") => false,
            Some(other) => return Err(PagingError::Order(other.to_owned())),
        };
        Ok(Page {
            limit,
            descending,
            after: self.after.clone().filter(|a| !a.is_empty()),
        })
    }
}

impl Page {
    pub fn limit(&self) -> usize {
        self.limit
    }

    pub fn descending(&self) -> bool {
        self.descending
    }

    /// `items` in creation order (oldest first), each with an `id`.
    pub fn apply(&self, mut items: Vec<Value>) -> Result<Value, PagingError> {
        if self.descending {
            items.reverse();
        }
        let start = match &self.after {
            None => 0,
            Some(after) => {
                items
                    .iter()
                    .position(|v| v["id"] == after.as_str())
                    .ok_or_else(|| PagingError::CursorNotFound(after.clone()))?
                    + 1
            }
        };
        let rest = items.len().saturating_sub(start);
        let data: Vec<Value> = items.into_iter().skip(start).take(self.limit).collect();
        Ok(envelope(data, rest > self.limit))
    }
}

pub fn envelope(data: Vec<Value>, has_more: bool) -> Value {
    let first = data.first().map(|v| v["id"].clone()).unwrap_or(Value::Null);
    let last = data.last().map(|v| v["id"].clone()).unwrap_or(Value::Null);
    json!({"object": "list", "data": data, "first_id": first, "last_id": last, "has_more": has_more})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(n: usize) -> Vec<Value> {
        (0..n).map(|i| json!({"id": format!("x{i}")})).collect()
    }

    fn q(limit: Option<&str>, order: Option<&str>, after: Option<&str>) -> PageQuery {
        PageQuery {
            limit: limit.map(str::to_owned),
            order: order.map(str::to_owned),
            after: after.map(str::to_owned),
        }
    }

    #[test]
    fn pages_concatenate_and_asc_is_desc_reversed() {
        for limit in 1..=6 {
            for order in ["asc", "desc"] {
                let mut seen = Vec::new();
                let mut after: Option<String> = None;
                loop {
                    let page = q(Some(&limit.to_string()), Some(order), after.as_deref())
                        .page()
                        .unwrap()
                        .apply(ids(5))
                        .unwrap();
                    for v in page["data"].as_array().unwrap() {
                        seen.push(v["id"].as_str().unwrap().to_owned());
                    }
                    if page["has_more"] == false {
                        break;
                    }
                    after = page["last_id"].as_str().map(str::to_owned);
                }
                let mut expected: Vec<String> = (0..5).map(|i| format!("x{i}")).collect();
                if order == "desc" {
                    expected.reverse();
                }
                assert_eq!(seen, expected, "limit {limit} {order}");
            }
        }
    }

    #[test]
    fn bad_parameters_are_named() {
        for (limit, order, param) in [
            (Some("0"), None, "limit"),
            (Some("101"), None, "limit"),
            (Some("x"), None, "limit"),
            (None, Some("up"), "order"),
        ] {
            let e = q(limit, order, None).page().err().unwrap();
            assert_eq!(e.param(), param);
        }
        let e = q(None, None, Some("nope"))
            .page()
            .unwrap()
            .apply(ids(2))
            .unwrap_err();
        assert_eq!(e, PagingError::CursorNotFound("nope".into()));
        assert_eq!(e.param(), "after");
        let empty = q(None, None, None).page().unwrap().apply(vec![]).unwrap();
        assert_eq!(
            empty,
            json!({"object":"list","data":[],"first_id":null,"last_id":null,"has_more":false})
        );
    }
}
