//! Files (content both ways, streamed, byte for byte), the file routes, watch, and the
//! terminal through the front.

use super::{Events, FRONT_TOKEN, answer, code, pair};
use crate::error::engine::Code;
use crate::wire::CONNECTION_HEADER;
use futures::{SinkExt, StreamExt};
use reqwest::{Method, StatusCode};
use serde_json::json;
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

/// `n` bytes no compression or text decoding would leave alone.
pub(super) fn noise(n: usize) -> Vec<u8> {
    let mut x: u32 = 0x9e37_79b9;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

#[tokio::test]
async fn content_crosses_both_ways_byte_for_byte() {
    let pair = pair().await;
    let id = pair.sandbox().await;
    let bytes = noise(5 * 1024 * 1024 + 7);
    let content = format!("/sandboxes/{id}/files/content");
    // Sent in uneven chunks, as a stream: the front passes them on as they come.
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        bytes.chunks(333_333).map(|c| Ok(c.to_vec())).collect();
    let body = reqwest::Body::wrap_stream(futures::stream::iter(chunks));
    let put = pair
        .front(Method::PUT, &format!("{content}?path=big.bin"))
        .body(body);
    let (status, entry) = answer(put).await;
    assert_eq!(status, StatusCode::OK, "{entry}");
    assert_eq!(entry["size"], bytes.len());

    let response = pair
        .front(Method::GET, &format!("{content}?path=big.bin"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.content_length(), Some(bytes.len() as u64));
    let got = response.bytes().await.unwrap();
    assert!(got[..] == bytes[..], "the bytes differ");

    // Not overwritten unless asked: the remote's E4004.
    let again = pair
        .front(
            Method::PUT,
            &format!("{content}?path=big.bin&overwrite=false"),
        )
        .body("x");
    let (status, body) = answer(again).await;
    assert_eq!(code(status, &body), Code::FileExists);
    pair.kill(&id).await;
}

#[tokio::test]
async fn a_body_of_declared_length_is_passed_on_byte_for_byte() {
    let pair = pair().await;
    let id = pair.sandbox().await;
    let content = format!("/sandboxes/{id}/files/content");
    let placed_before = crate::zero_copy::placed_here();
    let sent_before = crate::zero_copy::sent_here();
    // Empty, small, and past the 8 MiB from which the upload follows the splicing thread.
    for len in [0, 70_000, 9 * 1024 * 1024 + 7] {
        let bytes = noise(len);
        let name = format!("declared-{len}.bin");
        let put = pair
            .front(Method::PUT, &format!("{content}?path={name}"))
            .body(bytes.clone());
        let (status, entry) = answer(put).await;
        assert_eq!(status, StatusCode::OK, "{entry}");
        assert_eq!(entry["size"], len);
        let got = pair
            .remote(Method::GET, &format!("{content}?path={name}"))
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        assert!(got[..] == bytes[..], "{} bytes back of {len}", got.len());
    }
    // The front spliced the large one to the remote (the remote splices into its file
    // too, so at least twice its bulk was placed in all).
    let placed = crate::zero_copy::placed_here();
    assert!(
        placed - placed_before >= 2 * 9 * 1024 * 1024,
        "{placed_before} then {placed}"
    );
    // The remote (a `local` engine) sent every file it was asked for with `sendfile`.
    let sent = crate::zero_copy::sent_here() - sent_before;
    assert_eq!(
        sent,
        70_000 + 9 * 1024 * 1024 + 7,
        "bytes sent by the remote's connections"
    );
    // The remote's refusal passes through, its body unread.
    let again = pair
        .front(
            Method::PUT,
            &format!("{content}?path=declared-0.bin&overwrite=false"),
        )
        .body(noise(3 * 1024 * 1024));
    let (status, body) = answer(again).await;
    assert_eq!(code(status, &body), Code::FileExists);
    pair.kill(&id).await;
}

#[tokio::test]
async fn a_body_cut_short_leaves_nothing_at_the_remote_and_the_front_goes_on() {
    use tokio::io::AsyncWriteExt;
    let pair = pair().await;
    let id = pair.sandbox().await;
    let content = format!("/sandboxes/{id}/files/content");
    // Declares 1 MiB, sends 1,000 bytes and goes away.
    let text = format!(
        "PUT /v1{content}?path=cut.bin HTTP/1.1\r\nhost: {}\r\nauthorization: Bearer \
         {FRONT_TOKEN}\r\n{CONNECTION_HEADER}: {}\r\ncontent-length: 1048576\r\n\r\n",
        pair.front,
        pair.conn().header_value()
    );
    let mut raw = tokio::net::TcpStream::connect(pair.front).await.unwrap();
    raw.write_all(text.as_bytes()).await.unwrap();
    raw.write_all(&noise(1000)).await.unwrap();
    drop(raw);
    // The remote drops the short write: no file.
    let exists = format!("/sandboxes/{id}/files/exists?path=cut.bin");
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let (status, body) = answer(pair.remote(Method::GET, &exists)).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["exists"], false);
    }
    // And the front serves the next call.
    let (status, body) = answer(pair.front(Method::GET, &exists)).await;
    assert_eq!((status, &body["exists"]), (StatusCode::OK, &json!(false)));
    pair.kill(&id).await;
}

#[tokio::test]
async fn the_file_routes_go_to_the_remote() {
    let pair = pair().await;
    let id = pair.sandbox().await;
    let at = |tail: &str| format!("/sandboxes/{id}/files{tail}");
    answer(
        pair.front(Method::PUT, &at("/content?path=a.txt"))
            .body("hello"),
    )
    .await;
    let (status, made) = answer(
        pair.front(Method::POST, &at("/mkdir"))
            .json(&json!({"path": "d/e", "parents": true})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{made}");
    let (status, moved) = answer(
        pair.front(Method::POST, &at("/move"))
            .json(&json!({"from": "a.txt", "to": "d/e/b.txt"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{moved}");
    let exists = |path: &str| answer(pair.front(Method::GET, &at(&format!("/exists?path={path}"))));
    assert_eq!(exists("a.txt").await.1, json!({"exists": false}));
    assert_eq!(exists("d/e/b.txt").await.1, json!({"exists": true}));
    let (_, info) = answer(pair.front(Method::GET, &at("/info?path=d/e/b.txt"))).await;
    assert_eq!(
        (&info["size"], &info["type"]),
        (&json!(5), &json!("file")),
        "{info}"
    );
    let (_, list) = answer(pair.front(Method::GET, &at("/list?path=d&depth=2"))).await;
    let names: Vec<_> = list["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].clone())
        .collect();
    assert!(
        names.contains(&json!("b.txt")) && names.contains(&json!("e")),
        "{list}"
    );
    // The remote sees the same folder.
    let raw = pair
        .remote(Method::GET, &at("/content?path=d/e/b.txt"))
        .send()
        .await
        .unwrap();
    assert_eq!(raw.bytes().await.unwrap(), "hello");

    let (status, body) = answer(pair.front(Method::DELETE, &at("?path=d"))).await;
    assert_eq!(code(status, &body), Code::WrongFileType);
    let (_, removed) = answer(pair.front(Method::DELETE, &at("?path=d&recursive=true"))).await;
    assert_eq!(removed["deleted"], true, "{removed}");
    assert_eq!(exists("d").await.1, json!({"exists": false}));
    pair.kill(&id).await;
}

#[tokio::test]
async fn watch_events_arrive_as_they_happen() {
    let pair = pair().await;
    let id = pair.sandbox().await;
    let mut events = Events::open(pair.front(
        Method::GET,
        &format!("/sandboxes/{id}/files/watch?path=.&recursive=true"),
    ))
    .await;
    // The watch is set before its answer's head: a write now is seen.
    let put = pair
        .front(
            Method::PUT,
            &format!("/sandboxes/{id}/files/content?path=w.txt"),
        )
        .body("x");
    assert_eq!(answer(put).await.0, StatusCode::OK);
    let (name, data) = events.next().await.expect("an event");
    assert!(
        matches!(name.as_str(), "create" | "modify"),
        "{name} {data}"
    );
    assert!(data["path"].as_str().unwrap().ends_with("w.txt"), "{data}");
    pair.kill(&id).await;
    // The sandbox's end ends the watch with the remote's error event.
    loop {
        match tokio::time::timeout(Duration::from_secs(20), events.next())
            .await
            .unwrap()
        {
            Some((name, data)) if name == "error" => {
                assert_eq!(data["error"]["code"], "E2009", "{data}");
                break;
            }
            Some(_) => continue,
            None => panic!("the watch ended without its error"),
        }
    }
}

#[tokio::test]
async fn a_terminal_round_trips_and_closes_with_its_shell() {
    let pair = pair().await;
    let id = pair.sandbox().await;
    let url = format!(
        "ws://{}/v1/sandboxes/{id}/terminal?shell=/bin/sh&cols=100&rows=30",
        pair.front
    );
    let mut request = url.into_client_request().unwrap();
    let headers = request.headers_mut();
    headers.insert(
        "authorization",
        format!("Bearer {FRONT_TOKEN}").parse().unwrap(),
    );
    headers.insert(
        CONNECTION_HEADER,
        pair.conn().header_value().parse().unwrap(),
    );
    let (mut socket, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    socket
        .send(Message::text(r#"{"type":"resize","cols":120,"rows":40}"#))
        .await
        .unwrap();
    socket
        .send(Message::binary(&b"stty size; echo $((40+2))-ok\n"[..]))
        .await
        .unwrap();
    let mut seen = Vec::new();
    let read = async {
        while let Some(Ok(message)) = socket.next().await {
            if let Message::Binary(bytes) = message {
                seen.extend_from_slice(&bytes);
                let text = String::from_utf8_lossy(&seen);
                if text.contains("42-ok") && text.contains("40 120") {
                    return;
                }
            }
        }
    };
    let answered = tokio::time::timeout(Duration::from_secs(20), read)
        .await
        .is_ok();
    assert!(
        answered,
        "no answer in the terminal: {}",
        String::from_utf8_lossy(&seen)
    );
    socket.send(Message::binary(&b"exit\n"[..])).await.unwrap();
    let closed = async {
        loop {
            match socket.next().await {
                Some(Ok(Message::Close(frame))) => return frame.map(|f| u16::from(f.code)),
                Some(Ok(_)) => continue,
                Some(Err(_)) | None => return None,
            }
        }
    };
    let code = tokio::time::timeout(Duration::from_secs(20), closed)
        .await
        .unwrap();
    assert_eq!(code, Some(1000));
    pair.kill(&id).await;
}
