//! Which group serves a row, said once: the router binds a row's handler, the OpenAPI
//! document takes its declaration and `docs/endpoints.md` its example through here, never
//! through a `match` of their own. A group that declares a [`Route`] per handler file hands
//! over its list; the core, commands and agents groups answer with functions of their own.

use crate::server::endpoints::{Endpoint, Group};
use crate::server::example::Example;
use crate::server::groups::{agents, browser, commands, core, dev_tools, files, process};
use crate::server::groups::{system, terminal};
use crate::server::openapi::op::Doc;
use crate::server::route::{Bound, Route};
use axum::routing::MethodFilter;

/// How a group hands over its rows.
enum Served {
    /// One [`Route`] per handler file: binding, declaration and example together.
    Routes(&'static [&'static Route]),
    /// A group that binds and declares through functions (no documented examples).
    Functions {
        handler: fn(crate::server::endpoints::EndpointId, MethodFilter) -> Option<Bound>,
        doc: fn(crate::server::endpoints::EndpointId) -> Option<&'static Doc>,
    },
}

fn served(group: Group) -> Served {
    match group {
        Group::Core => Served::Functions {
            handler: core::handler,
            doc: core::doc,
        },
        Group::Commands => Served::Functions {
            handler: commands::handler,
            doc: commands::doc,
        },
        Group::Agents => Served::Functions {
            handler: agents::handler,
            doc: agents::doc,
        },
        Group::FileOps => Served::Routes(files::ROUTES),
        Group::Process => Served::Routes(process::ROUTES),
        Group::Terminal => Served::Routes(terminal::ROUTES),
        Group::System => Served::Routes(system::ROUTES),
        Group::DevTools => Served::Routes(dev_tools::ROUTES),
        Group::Browser => Served::Routes(browser::ROUTES),
    }
}

fn route(routes: &'static [&'static Route], endpoint: &Endpoint) -> Option<&'static Route> {
    routes.iter().copied().find(|r| r.id() == endpoint.key)
}

/// The handler of a row, bound with the row's method filter `f`.
pub fn handler(endpoint: &Endpoint, f: MethodFilter) -> Option<Bound> {
    match served(endpoint.group) {
        Served::Routes(routes) => route(routes, endpoint).map(|r| (r.bind)(f)),
        Served::Functions { handler, .. } => handler(endpoint.key, f),
    }
}

/// The OpenAPI declaration of a row; `None` for a refusal row, which the generator
/// documents from the row alone.
pub fn doc(endpoint: &Endpoint) -> Option<&'static Doc> {
    match served(endpoint.group) {
        Served::Routes(routes) => route(routes, endpoint).map(|r| r.doc),
        Served::Functions { doc, .. } => doc(endpoint.key),
    }
}

/// The documented example of a row (the groups that declare [`Route`]s have one each).
pub fn example(endpoint: &Endpoint) -> Option<&'static Example> {
    match served(endpoint.group) {
        Served::Routes(routes) => route(routes, endpoint).map(|r| r.example),
        Served::Functions { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::endpoints::{ENDPOINTS, Status};

    /// Whether `path` is a call of the row's `pattern` (a `{param}` segment takes any
    /// segment).
    fn calls(pattern: &str, path: &str) -> bool {
        let (want, got): (Vec<_>, Vec<_>) =
            (pattern.split('/').collect(), path.split('/').collect());
        want.len() == got.len()
            && want
                .iter()
                .zip(&got)
                .all(|(w, g)| w == g || (w.starts_with('{') && !g.is_empty()))
    }

    #[test]
    fn a_call_fills_the_parameters_and_nothing_else() {
        assert!(calls("/processes/{pid}", "/processes/4242"));
        assert!(calls("/files/content", "/files/content"));
        assert!(!calls("/processes/{pid}", "/processes"));
        assert!(!calls("/processes/{pid}/stdin", "/processes/1/signal"));
    }

    /// Every implemented row of a group that declares routes has exactly one, in its own
    /// group, and its example calls the row's method and path; no other row has one. (Was
    /// one copy of this test per group.)
    #[test]
    fn every_implemented_row_of_a_route_group_has_one_route_and_its_example_calls_it() {
        let mut declared = 0;
        for endpoint in ENDPOINTS {
            let Served::Routes(routes) = served(endpoint.group) else {
                continue;
            };
            let found = routes.iter().filter(|r| r.id() == endpoint.key).count();
            let implemented = endpoint.status == Status::Implemented;
            assert_eq!(found, usize::from(implemented), "{}", endpoint.id);
            if implemented {
                declared += 1;
                let x = example(endpoint).unwrap();
                assert_eq!(x.method, endpoint.method.as_str(), "{}", endpoint.id);
                let path = x.target.split('?').next().unwrap_or_default();
                assert!(
                    calls(endpoint.path, path),
                    "{}: the example calls {}",
                    endpoint.id,
                    x.target
                );
                assert!(handler(endpoint, MethodFilter::GET).is_some());
            }
        }
        // Each route belongs to a row of its own group (none is listed in another's).
        let all: usize = Group::ALL
            .iter()
            .map(|g| match served(*g) {
                Served::Routes(routes) => routes.len(),
                Served::Functions { .. } => 0,
            })
            .sum();
        assert_eq!(all, declared);
    }

    /// Every documented example of every group that lists routes answers what the docs
    /// show: one runner (`server::example_run`), each group's own needs in its
    /// `examples.rs`. A group that starts listing routes must name its harness here.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_example_answers_what_the_docs_show() {
        use crate::server::example_run::run;
        for group in Group::ALL {
            let Served::Routes(routes) = served(group) else {
                continue;
            };
            match group {
                Group::FileOps => run::<files::examples::Examples>(routes).await,
                Group::Process => run::<process::examples::Examples>(routes).await,
                Group::Terminal => run::<terminal::examples::Examples>(routes).await,
                Group::System => run::<system::examples::Examples>(routes).await,
                Group::DevTools => run::<dev_tools::examples::Examples>(routes).await,
                Group::Browser => run::<browser::examples::Examples>(routes).await,
                Group::Core | Group::Commands | Group::Agents => {
                    unreachable!("{group:?} lists no routes")
                }
            }
        }
    }
}
