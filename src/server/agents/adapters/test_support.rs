//! What the two adapters' tests share: a request, running captured output through a parser,
//! the events the captures expect, and the shape of an event sequence.

use super::{Adapter, ItemKind, ItemStatus, RuntimeEvent, RuntimeItem, TurnRequest, Usage};
use std::path::PathBuf;

pub fn request(prompt: &str) -> TurnRequest {
    TurnRequest {
        prompt: prompt.into(),
        cwd: PathBuf::from("/work/ws"),
        ..TurnRequest::default()
    }
}

/// The argv `adapter` builds, checking the program it starts.
pub fn args(adapter: &dyn Adapter, program: &str, request: &TurnRequest) -> Vec<String> {
    let launch = adapter.launch(request);
    assert_eq!(launch.program, program);
    launch.args
}

/// Every event the adapter's parser makes of `output`, line by line, then at its end.
pub fn run(adapter: &dyn Adapter, output: &str) -> Vec<RuntimeEvent> {
    let mut parser = adapter.parser();
    let mut events: Vec<RuntimeEvent> =
        output.lines().flat_map(|line| parser.parse(line)).collect();
    events.extend(parser.finish());
    events
}

pub fn thread(id: &str) -> RuntimeEvent {
    RuntimeEvent::ThreadStarted {
        thread_id: id.into(),
    }
}

pub fn item(key: &str, kind: ItemKind, status: ItemStatus) -> RuntimeItem {
    RuntimeItem {
        key: key.into(),
        kind,
        status,
    }
}

pub fn completed(key: &str, kind: ItemKind, status: ItemStatus) -> RuntimeEvent {
    RuntimeEvent::ItemCompleted(item(key, kind, status))
}

pub fn message(key: &str, text: &str) -> RuntimeEvent {
    completed(
        key,
        ItemKind::Message { text: text.into() },
        ItemStatus::Completed,
    )
}

pub fn done(input: u64, cached: u64, output: u64) -> RuntimeEvent {
    RuntimeEvent::TurnCompleted {
        usage: Some(Usage {
            input_tokens: input,
            output_tokens: output,
            cached_input_tokens: cached,
        }),
    }
}

pub fn command(command: &str, output: &str, exit_code: Option<i32>) -> ItemKind {
    ItemKind::CommandExecution {
        command: command.into(),
        output: output.into(),
        exit_code,
    }
}

/// Only the variant: real and fake runs differ in ids and text, not in what happens.
pub fn shape(events: &[RuntimeEvent]) -> Vec<String> {
    events
        .iter()
        .map(|event| match event {
            RuntimeEvent::ItemStarted(i)
            | RuntimeEvent::ItemUpdated(i)
            | RuntimeEvent::ItemCompleted(i) => {
                let kind = format!("{:?}", i.kind);
                let kind = kind.split([' ', '{']).next().unwrap_or_default().to_owned();
                let phase = format!("{event:?}");
                format!(
                    "{}({kind},{:?})",
                    phase.split('(').next().unwrap_or_default(),
                    i.status
                )
            }
            other => format!("{other:?}")
                .split([' ', '{', '('])
                .next()
                .unwrap_or_default()
                .to_owned(),
        })
        .collect()
}
