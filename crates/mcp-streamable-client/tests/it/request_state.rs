//! M9, the client side: `requestState` (SEP-2322) belongs to the application, which echoes it
//! on its retry; the transport carries it byte for byte, under the id the application gave each
//! round, and mixes nothing of one round into another request.

use http::Response as HttpResponse;
use mcp_jsonrpc::{Id, Message, Request, to_raw_value};
use mcp_streamable_client::Family;
use serde_json::{Value, json};

use crate::fake::{self, Body, Fake, Req};
use crate::*;

/// A state with what a careless transport could alter: escapes, spaces, non-ASCII.
const STATE: &str = "s1.k\"1\\n . été";

/// Asks for input on a call without `requestState`; completes one that echoes [`STATE`].
fn asking(req: &Req) -> HttpResponse<Body> {
    let id = req.id();
    let params = &req.json()["params"];
    let result = match params.get("requestState") {
        None if params["name"] == "confirm" => json!({
            "resultType": "input_required",
            "inputRequests": {"ok": {"method": "elicitation/create", "params": {}}},
            "requestState": STATE,
        }),
        _ => json!({"resultType": "complete", "content": []}),
    };
    fake::json_reply(json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

fn call(id: i64, params: Value) -> Message {
    Request::new(id, "tools/call", Some(to_raw_value(&params).unwrap())).into()
}

#[tokio::test]
async fn m9_request_state_is_the_applications_carried_unchanged() {
    let server = Fake::start(|req| async move { asking(&req) }).await;
    let mut conn = connect(builder(&server.url).family(Family::PerRequest)).await;
    send(&conn, call(1, json!({"name": "confirm"})))
        .await
        .unwrap();
    let first = recv_response(&mut conn).await;
    let result: Value = serde_json::from_str(first.result().unwrap().get()).unwrap();
    assert_eq!(
        result["requestState"], STATE,
        "delivered as the server sent it"
    );
    // Another request meanwhile, then the retry: a new id, the state echoed.
    send(&conn, call(2, json!({"name": "other"})))
        .await
        .unwrap();
    assert_eq!(recv_response(&mut conn).await.id(), Some(&Id::from(2)));
    let retry = json!({"name": "confirm", "requestState": STATE,
        "inputResponses": {"ok": {"action": "accept"}}});
    send(&conn, call(3, retry)).await.unwrap();
    assert_eq!(recv_response(&mut conn).await.id(), Some(&Id::from(3)));

    let log = server.requests();
    assert_eq!(log.len(), 3);
    assert_eq!(log[0].json()["params"].get("requestState"), None);
    assert_eq!(
        log[1].json()["params"].get("requestState"),
        None,
        "not mixed in"
    );
    assert_eq!(log[1].json()["params"].get("inputResponses"), None);
    assert_eq!(log[2].id(), json!(3));
    assert_eq!(log[2].json()["params"]["requestState"], STATE);
}
