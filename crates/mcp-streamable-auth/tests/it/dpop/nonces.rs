//! Server nonces: asked for with `use_dpop_nonce`, then accepted, on any node with the secret.

use super::*;

/// The proof of `client` for `token`, with `nonce`.
fn with_nonce(client: &Client, token: &str, nonce: &str) -> String {
    let mut claims = claims("POST", HTU, token);
    claims["nonce"] = json!(nonce);
    client.sign(&claims)
}

fn nonce_of(answer: &Answer) -> String {
    answer
        .headers
        .get("dpop-nonce")
        .expect("a DPoP-Nonce header")
        .to_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn a_missing_nonce_gets_use_dpop_nonce_with_a_fresh_one_then_succeeds_with_it() {
    let server = Server::new(dpop::Config::default().require_nonce());
    let client = Client::ec1();
    let answer = server
        .dpop("bound", &[&client.proof("POST", HTU, "bound")])
        .await;
    answer.assert_dpop_error("use_dpop_nonce");
    assert_eq!(
        answer.body,
        r#"{"error":"use_dpop_nonce","error_description":"the DPoP proof needs the nonce this server provides"}"#
    );
    let nonce = nonce_of(&answer);
    let answer = server
        .dpop("bound", &[&with_nonce(&client, "bound", &nonce)])
        .await;
    assert_eq!(answer.status, 200, "{}", answer.challenge());
    assert_eq!(server.reached(), 1);
}

#[tokio::test]
async fn a_nonce_this_server_did_not_give_gets_a_fresh_one() {
    let server = Server::new(dpop::Config::default().require_nonce());
    let client = Client::ec1();
    let answer = server
        .dpop("bound", &[&with_nonce(&client, "bound", "made-up")])
        .await;
    answer.assert_dpop_error("use_dpop_nonce");
    assert_ne!(nonce_of(&answer), "made-up");
    // A nonce from a node with another secret is not one of ours either.
    let other = Server::new(dpop::Config::default().nonce_secret([2; 32]));
    let asked = other
        .dpop("bound", &[&client.proof("POST", HTU, "bound")])
        .await;
    let theirs = nonce_of(&asked);
    let answer = server
        .dpop("bound", &[&with_nonce(&client, "bound", &theirs)])
        .await;
    answer.assert_dpop_error("use_dpop_nonce");
    assert_eq!(server.reached(), 0);
}

#[tokio::test]
async fn nodes_with_one_secret_accept_each_others_nonces_without_shared_state() {
    let a = Server::new(dpop::Config::default().nonce_secret([9; 32]));
    let b = Server::new(dpop::Config::default().nonce_secret([9; 32]));
    let client = Client::ec1();
    let answer = a
        .dpop("bound", &[&client.proof("POST", HTU, "bound")])
        .await;
    answer.assert_dpop_error("use_dpop_nonce");
    let nonce = nonce_of(&answer);
    let answer = b
        .dpop("bound", &[&with_nonce(&client, "bound", &nonce)])
        .await;
    assert_eq!(answer.status, 200, "{}", answer.challenge());
}
