//! What a conformance case is, and the `case!` macro that keeps definitions short.

use std::future::Future;
use std::pin::Pin;

use crate::contract::Contract;
use crate::ctx::Ctx;
use crate::profiles::Profile;

/// The boxed future a case body returns; boxed so cases fit in one `Vec`.
pub type CaseFuture = Pin<Box<dyn Future<Output = anyhow::Result<()>> + Send>>;

/// One black-box check of one spec sentence.
#[derive(Clone, Copy)]
pub struct Case {
    /// `group/area/nnn`; the group is the first segment.
    pub id: &'static str,
    /// The spec sentence this case checks.
    pub spec: &'static str,
    /// The profile the case needs; it also says what the case tests.
    pub profile: &'static Profile,
    /// Capability tags such as `needs:fake-runtimes`.
    pub tags: &'static [&'static str],
    /// Endpoint ids covered (read by the coverage gate).
    pub endpoints: &'static [&'static str],
    /// Error codes covered (read by the coverage gate).
    pub codes: &'static [&'static str],
    pub run: fn(Ctx) -> CaseFuture,
}

impl Case {
    pub fn group(&self) -> &str {
        self.id.split('/').next().unwrap_or(self.id)
    }

    /// What the case tests: its profile's contract.
    pub fn contract(&self) -> Contract {
        self.profile.contract
    }

    pub fn has_tag(&self, tag: &str) -> bool {
        self.tags.contains(&tag)
    }
}

impl std::fmt::Debug for Case {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Case")
            .field("id", &self.id)
            .field("profile", &self.profile.name)
            .field("tags", &self.tags)
            .finish_non_exhaustive()
    }
}

/// Boxes a case body. The explicit `Output` bound lets `?` and `Ok(())` infer
/// `anyhow::Result<()>` inside the async block.
pub fn boxed<F>(fut: F) -> CaseFuture
where
    F: Future<Output = anyhow::Result<()>> + Send + 'static,
{
    Box::pin(fut)
}

/// Defines a [`Case`]. Fields come in this order; `tags`, `endpoints` and
/// `codes` take bracketed lists of string literals (possibly empty). `run` is
/// either `|ctx| async move { ... }` (the block must end in `Ok(())`) or the
/// path of an `async fn(Ctx) -> anyhow::Result<()>`.
///
/// ```ignore
/// case! {
///     id: "core/health/001",
///     spec: "GET /health answers 200 without a token.",
///     profile: &profiles::ANY,
///     tags: [],
///     endpoints: ["health"],
///     codes: [],
///     run: |ctx| async move {
///         ctx.send(ctx.anonymous(Method::GET, "/health")).await?.expect_status(200)?;
///         Ok(())
///     },
/// }
/// ```
#[macro_export]
macro_rules! case {
    (
        id: $id:expr,
        spec: $spec:expr,
        profile: $profile:expr,
        tags: [$($tag:expr),* $(,)?],
        endpoints: [$($ep:expr),* $(,)?],
        codes: [$($code:expr),* $(,)?],
        run: |$ctx:ident| async move $body:block $(,)?
    ) => {
        $crate::Case {
            id: $id,
            spec: $spec,
            profile: $profile,
            tags: &[$($tag),*],
            endpoints: &[$($ep),*],
            codes: &[$($code),*],
            run: |$ctx: $crate::Ctx| -> $crate::CaseFuture {
                $crate::case::boxed(async move {
                    let result: ::anyhow::Result<()> = async move $body.await;
                    result
                })
            },
        }
    };
    (
        id: $id:expr,
        spec: $spec:expr,
        profile: $profile:expr,
        tags: [$($tag:expr),* $(,)?],
        endpoints: [$($ep:expr),* $(,)?],
        codes: [$($code:expr),* $(,)?],
        run: $run:path $(,)?
    ) => {
        $crate::Case {
            id: $id,
            spec: $spec,
            profile: $profile,
            tags: &[$($tag),*],
            endpoints: &[$($ep),*],
            codes: &[$($code),*],
            run: |ctx: $crate::Ctx| -> $crate::CaseFuture { $crate::case::boxed($run(ctx)) },
        }
    };
}
