//! Unit tests of the gateway's parsers: the projection file, UTF-8 field location and answer
//! repair, the completions request's own fields, and the rerank request shapes (Jina, Cohere
//! v1 and v2).

mod common;

use hetreward::select::Policy;
use hetreward_serve::internals::*;
use serde_json::{json, Map, Value};
use std::borrow::Cow;

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => panic!("not an object"),
    }
}

// ---- projection ------------------------------------------------------------------------

#[test]
fn projection_reads_and_applies_as_pbon_cpp() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.projection.safetensors");
    common::write_projection(&path, 5, 3, "Q: {question}\nA: {answer}");
    let p = Projection::load(&path).unwrap();
    assert_eq!((p.dim_in(), p.dim_out()), (5, 3));
    assert_eq!(p.template(), "Q: {question}\nA: {answer}");
    assert_eq!(p.embedding_model(), Some("mock-embedder"));
    let e: Vec<f32> = vec![0.5, -0.25, 1.0, 0.125, -2.0];
    let mut phi = Vec::new();
    p.apply_into(&e, &mut phi).unwrap();
    // The same sums as pbon.cpp: f64 accumulation in index order, one rounding to f32.
    for (k, &got) in phi.iter().enumerate() {
        let mut s = 0.0f64;
        for (j, &x) in e.iter().enumerate() {
            let mean = 0.01 * j as f64;
            let c = (1.0 + k as f64 + 0.7 * j as f64).sin();
            s += (f64::from(x) - mean) * c;
        }
        assert_eq!(got, s as f32);
    }
    assert!(p
        .apply_into(&e[..4], &mut phi)
        .unwrap_err()
        .contains("width 4"));
    // One-pass substitution: placeholders inside the question or answer stay as they are.
    assert_eq!(
        p.render("{answer}?", "{question}!"),
        "Q: {answer}?\nA: {question}!"
    );
}

fn projection_bytes(meta: &[(&str, &str)], mean: &[usize], comps: &[usize]) -> Vec<u8> {
    use safetensors::tensor::{Dtype, TensorView};
    let mb = vec![0u8; 8 * mean.iter().product::<usize>()];
    let cb = vec![0u8; 8 * comps.iter().product::<usize>()];
    let tensors = vec![
        (
            "mean",
            TensorView::new(Dtype::F64, mean.to_vec(), &mb).unwrap(),
        ),
        (
            "components",
            TensorView::new(Dtype::F64, comps.to_vec(), &cb).unwrap(),
        ),
    ];
    let meta = meta
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    safetensors::tensor::serialize(tensors, &Some(meta)).unwrap()
}

/// A FIFO named like a projection file is refused at once (reading it would block start-up
/// in `open` until a writer came); a folder is refused as a folder.
#[test]
fn projection_refuses_a_fifo_and_a_folder_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("projection.safetensors");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo failed");
    let (tx, rx) = std::sync::mpsc::channel();
    let path = fifo.clone();
    std::thread::spawn(move || tx.send(Projection::load(&path).err()).unwrap());
    let err = rx
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("Projection::load blocked on a FIFO")
        .expect("a FIFO was accepted");
    assert!(
        err.contains("FIFO") && err.contains("not a regular file"),
        "{err}"
    );
    let Err(err) = Projection::load(dir.path()) else {
        panic!("a folder was accepted");
    };
    assert!(err.contains("a folder"), "{err}");
}

#[test]
fn projection_rejects_what_the_format_forbids() {
    let good = [("format", FORMAT), ("text", "{question} {answer}")];
    assert!(Projection::from_bytes(&projection_bytes(&good, &[4], &[2, 4])).is_ok());
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            projection_bytes(
                &[("format", "other"), ("text", "{question} {answer}")],
                &[4],
                &[2, 4],
            ),
            "not \"hetreward-projection-1\"",
        ),
        (
            projection_bytes(&[("text", "{question}")], &[4], &[2, 4]),
            "no `format`",
        ),
        (
            projection_bytes(&[("format", FORMAT), ("text", "{question}")], &[4], &[2, 4]),
            "lacks",
        ),
        (
            projection_bytes(&[("format", FORMAT)], &[4], &[2, 4]),
            "no `text`",
        ),
        (projection_bytes(&good, &[4], &[2, 5]), "do not match"),
        (
            projection_bytes(
                &[
                    ("format", FORMAT),
                    ("text", "{question}{answer}"),
                    ("dim_in", "7"),
                ],
                &[4],
                &[2, 4],
            ),
            "dim_in",
        ),
        (b"not a file".to_vec(), "safetensors"),
    ];
    for (bytes, want) in cases {
        let e = Projection::from_bytes(&bytes).unwrap_err();
        assert!(e.contains(want), "{e:?} lacks {want:?}");
    }
}

// ---- UTF-8 -----------------------------------------------------------------------------

#[test]
fn invalid_request_bytes_name_their_field() {
    let with = |before: &str, bad: &[u8], after: &str| {
        let mut b = before.as_bytes().to_vec();
        b.extend_from_slice(bad);
        b.extend_from_slice(after.as_bytes());
        invalid_field(&b)
    };
    assert_eq!(invalid_field(br#"{"prompt": "ok \u00e9"}"#), None);
    assert_eq!(
        with(r#"{"prompt": "caf"#, &[0xE9], r#""}"#).as_deref(),
        Some("prompt")
    );
    assert_eq!(
        with(
            r#"{"model": "m", "messages": [{"role": "user", "content": "x"#,
            &[0xF0, 0x9F],
            r#""}]}"#
        )
        .as_deref(),
        Some("messages[0].content")
    );
    assert_eq!(
        with(
            r#"{"messages": [{"role": "system", "content": "fine"}, {"role": "user", "content": [{"type": "text", "text": "a"#,
            &[0xFF],
            r#""}]}]}"#
        )
        .as_deref(),
        Some("messages[1].content[0].text")
    );
    // A body that already holds a (valid) U+FFFD: the field with the bad byte is still found.
    assert_eq!(
        with(r#"{"a": "ok �", "b": "x"#, &[0xC3], r#""}"#).as_deref(),
        Some("b")
    );
    // In a key, and outside any string.
    assert_eq!(
        with(r#"{"k"#, &[0x80], r#"": 1}"#).as_deref(),
        Some("k\u{FFFD}")
    );
    assert!(with(r#"{"a": 1"#, &[0x80], "}")
        .unwrap()
        .starts_with("body"));
    // The 400 through the request reader.
    let e = json_object(&[b'{', b'"', b'p', b'"', b':', b'"', 0xC0, b'"', b'}']).unwrap_err();
    assert_eq!(e.status.as_u16(), 400);
    assert_eq!(e.param.as_deref(), Some("p"));
    assert!(json_object(b"[1]").is_err());
    assert!(json_object(b"{\"a\": ")
        .unwrap_err()
        .message
        .contains("malformed JSON"));
}

#[test]
fn answers_are_repaired_never_refused() {
    // A raw invalid byte (an answer cut mid-character).
    let raw = b"{\"text\": \"cut \xF0\x9F\"}";
    let fixed = repair(raw);
    let v: Value = serde_json::from_str(&fixed).unwrap();
    assert_eq!(v["text"], "cut \u{FFFD}");
    // Lone surrogate escapes (high without low, low alone, high at the end).
    for (input, want) in [
        (r#"{"t": "a\ud83d b"}"#, "a\u{FFFD} b"),
        (r#"{"t": "a\ude00"}"#, "a\u{FFFD}"),
        (r#"{"t": "\ud83d"}"#, "\u{FFFD}"),
        (r#"{"t": "\ud83d\ud83d\ude00"}"#, "\u{FFFD}\u{1F600}"),
    ] {
        let v: Value = serde_json::from_str(&repair(input.as_bytes())).unwrap();
        assert_eq!(v["t"], want, "{input}");
    }
    // A valid pair, an escaped backslash before `u`, plain text: untouched.
    for ok in [
        r#"{"t": "\ud83d\ude00"}"#,
        r#"{"t": "\\ud83d"}"#,
        r#"{"t": "plain"}"#,
    ] {
        assert!(matches!(repair(ok.as_bytes()), Cow::Borrowed(_)) || repair(ok.as_bytes()) == ok);
        assert_eq!(repair(ok.as_bytes()), ok);
    }
}

// ---- completions request ---------------------------------------------------------------

#[test]
fn completions_fields_are_checked() {
    let p = |v: Value| parse_params(&obj(v), 16, 0.05);
    let d = p(json!({"prompt": "x"})).unwrap();
    assert_eq!(
        d,
        Params {
            best_of: 1,
            n: 1,
            alpha: 0.05,
            policy: Policy::Pbon,
            stream: false
        }
    );
    let d = p(json!({"n": 3})).unwrap();
    assert_eq!((d.best_of, d.n), (3, 3), "best_of defaults to n");
    let d = p(json!({"best_of": 8, "n": 2, "alpha": 0.1, "policy": "bon"})).unwrap();
    assert_eq!(
        (d.best_of, d.n, d.alpha, d.policy),
        (8, 2, 0.1, Policy::Bon)
    );
    assert_eq!(p(json!({"best_of": 4.0})).unwrap().best_of, 4);
    assert!(p(json!({"best_of": 1, "stream": true})).unwrap().stream);
    assert!(p(json!({"stream": true, "n": 1})).unwrap().stream);
    for (body, param) in [
        (json!({"best_of": 0}), "best_of"),
        (json!({"best_of": 17}), "best_of"),
        (json!({"best_of": 2.5}), "best_of"),
        (json!({"best_of": "4"}), "best_of"),
        (json!({"best_of": -1}), "best_of"),
        (json!({"n": 0}), "n"),
        (json!({"best_of": 2, "n": 3}), "n"),
        (json!({"n": 17}), "n"),
        (json!({"alpha": 0}), "alpha"),
        (json!({"alpha": 1}), "alpha"),
        (json!({"alpha": "0.1"}), "alpha"),
        (json!({"policy": "greedy"}), "policy"),
        (json!({"policy": 1}), "policy"),
        (json!({"best_of": 2, "stream": true}), "stream"),
        (json!({"stream": "yes"}), "stream"),
    ] {
        let e = p(body.clone()).unwrap_err();
        assert_eq!(e.status.as_u16(), 400, "{body}");
        assert_eq!(e.param.as_deref(), Some(param), "{body}: {}", e.message);
        assert_eq!(e.kind, "invalid_request_error");
        let b = e.body();
        assert!(b["error"]["message"].is_string() && b["error"].get("code").is_some());
    }
}

#[test]
fn the_question_is_the_prompt_or_the_last_user_message() {
    let q = |k, v: Value| question(k, &obj(v));
    assert_eq!(q(Kind::Completions, json!({"prompt": "hi"})).unwrap(), "hi");
    assert_eq!(
        q(Kind::Completions, json!({"prompt": ["one"]})).unwrap(),
        "one"
    );
    assert_eq!(
        q(Kind::Completions, json!({"prompt": ["a", "b"]}))
            .unwrap_err()
            .param
            .as_deref(),
        Some("prompt")
    );
    assert!(q(Kind::Completions, json!({"prompt": [1, 2]})).is_err());
    assert!(q(Kind::Completions, json!({})).is_err());
    let chat = json!({"messages": [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "reply"},
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url"}, {"type": "text", "text": "b"}]},
        {"role": "assistant", "content": null},
    ]});
    assert_eq!(q(Kind::Chat, chat).unwrap(), "ab");
    assert!(q(Kind::Chat, json!({"messages": "x"})).is_err());
}

// ---- rerank request --------------------------------------------------------------------

#[test]
fn rerank_shapes_jina_cohere_v1_v2() {
    // Jina: documents as strings or {"text"}, top_n, return_documents.
    let jina = parse_rerank(
        &obj(
            json!({"model": "jina-reranker-v2", "query": "q", "top_n": 2,
                    "documents": ["a", {"text": "b"}, "c"], "return_documents": false}),
        ),
        0.05,
    )
    .unwrap();
    assert_eq!(jina.documents, ["a", "b", "c"]);
    assert_eq!((jina.top_n, jina.return_documents), (Some(2), false));
    assert_eq!(jina.order_by, OrderBy::Lower);
    assert_eq!(jina.model, Some(json!("jina-reranker-v2")));
    // Cohere v1: documents as {"text"} objects (extra keys ignored), return_documents.
    let v1 = parse_rerank(
        &obj(json!({"model": "rerank-english-v3.0", "query": "q",
                    "documents": [{"text": "x", "title": "t"}], "return_documents": true,
                    "max_chunks_per_doc": 10})),
        0.05,
    )
    .unwrap();
    assert_eq!(
        (v1.documents.len(), v1.return_documents, v1.top_n),
        (1, true, None)
    );
    // Cohere v2: strings, top_n, max_tokens_per_doc (ignored); extension fields.
    let v2 = parse_rerank(
        &obj(
            json!({"model": "rerank-v3.5", "query": "q", "documents": ["x", "y"], "top_n": 5,
                    "max_tokens_per_doc": 4096, "order_by": "reward", "alpha": 0.2}),
        ),
        0.05,
    )
    .unwrap();
    assert_eq!(
        (v2.order_by, v2.alpha, v2.return_documents),
        (OrderBy::Reward, 0.2, true)
    );
    for (body, param) in [
        (json!({"documents": ["a"]}), "query"),
        (json!({"query": 3, "documents": ["a"]}), "query"),
        (json!({"query": "q"}), "documents"),
        (json!({"query": "q", "documents": []}), "documents"),
        (json!({"query": "q", "documents": "a"}), "documents"),
        (json!({"query": "q", "documents": ["a", 5]}), "documents[1]"),
        (
            json!({"query": "q", "documents": [{"title": "no text"}]}),
            "documents[0]",
        ),
        (
            json!({"query": "q", "documents": ["a"], "top_n": 0}),
            "top_n",
        ),
        (
            json!({"query": "q", "documents": ["a"], "top_n": -2}),
            "top_n",
        ),
        (
            json!({"query": "q", "documents": ["a"], "order_by": "upper"}),
            "order_by",
        ),
        (
            json!({"query": "q", "documents": ["a"], "alpha": 2}),
            "alpha",
        ),
        (
            json!({"query": "q", "documents": ["a"], "return_documents": "yes"}),
            "return_documents",
        ),
    ] {
        let e = parse_rerank(&obj(body.clone()), 0.05).unwrap_err();
        assert_eq!(
            (e.status.as_u16(), e.param.as_deref()),
            (400, Some(param)),
            "{body}"
        );
    }
}

#[test]
fn embeddings_answers_are_ordered_and_checked() {
    let a = json!({"object": "list", "model": "e", "data": [
        {"object": "embedding", "index": 1, "embedding": [3.0, 4.0]},
        {"object": "embedding", "index": 0, "embedding": [1.0, 2.0]}]});
    assert_eq!(
        parse_embeddings(&a, 2).unwrap(),
        vec![vec![1.0f32, 2.0], vec![3.0, 4.0]]
    );
    assert!(parse_embeddings(&a, 3)
        .unwrap_err()
        .contains("2 embeddings for 3"));
    let ragged =
        json!({"data": [{"index": 0, "embedding": [1.0]}, {"index": 1, "embedding": [1.0, 2.0]}]});
    assert!(parse_embeddings(&ragged, 2).is_err());
    let dup = json!({"data": [{"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [1.0]}]});
    assert!(parse_embeddings(&dup, 2).is_err());
    assert!(parse_embeddings(&json!({"error": "x"}), 1).is_err());
}
