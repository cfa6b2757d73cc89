//! The table: a good request, then each way a DPoP request goes wrong, one test a row.

use super::*;

#[tokio::test]
async fn a_good_proof_lets_the_request_through_with_the_key_in_its_principal() {
    let server = Server::new(dpop::Config::default());
    let client = Client::ec1();
    let answer = server
        .dpop("bound", &[&client.proof("POST", HTU, "bound")])
        .await;
    assert_eq!(answer.status, 200, "{}", answer.challenge());
    assert_eq!(answer.body, client.jkt());
    assert_eq!(server.reached(), 1);
}

#[tokio::test]
async fn every_allowed_algorithm_verifies() {
    let server = Server::new(dpop::Config::default());
    let rows = [
        (Client::new(Algorithm::RS256, RSA1), "bound-rsa"),
        (Client::new(Algorithm::PS256, RSA1), "bound-rsa"),
        (Client::new(Algorithm::EdDSA, ED1), "bound-ed"),
    ];
    for (client, token) in rows {
        let answer = server
            .dpop(token, &[&client.proof("POST", HTU, token)])
            .await;
        assert_eq!(
            answer.status,
            200,
            "{:?}: {}",
            client.alg,
            answer.challenge()
        );
    }
    // An algorithm left out of the configuration is refused.
    let only_ec = Server::new(dpop::Config::default().algorithms([dpop::Algorithm::ES256]));
    let rsa = Client::new(Algorithm::RS256, RSA1);
    let answer = only_ec
        .dpop("bound-rsa", &[&rsa.proof("POST", HTU, "bound-rsa")])
        .await;
    assert_eq!(answer.status, 401);
    assert!(answer.challenge().starts_with(r#"DPoP algs="ES256", "#));
    assert!(answer.challenge().contains(r#"error="invalid_dpop_proof""#));
}

#[tokio::test]
async fn a_proof_for_another_method_is_refused() {
    let server = Server::new(dpop::Config::default());
    let proof = Client::ec1().proof("GET", HTU, "bound");
    server
        .dpop("bound", &[&proof])
        .await
        .assert_dpop_error("invalid_dpop_proof");
    assert_eq!(server.reached(), 0);
}

#[tokio::test]
async fn a_proof_for_another_url_is_refused() {
    let server = Server::new(dpop::Config::default());
    let client = Client::ec1();
    for htu in [
        "https://mcp.example.com/other",
        "https://evil.example.com/mcp",
        "http://mcp.example.com/mcp",
    ] {
        let proof = client.proof("POST", htu, "bound");
        server
            .dpop("bound", &[&proof])
            .await
            .assert_dpop_error("invalid_dpop_proof");
    }
    assert_eq!(server.reached(), 0);
}

#[tokio::test]
async fn a_replayed_jti_is_refused() {
    let server = Server::new(dpop::Config::default());
    let proof = Client::ec1().proof("POST", HTU, "bound");
    assert_eq!(server.dpop("bound", &[&proof]).await.status, 200);
    server
        .dpop("bound", &[&proof])
        .await
        .assert_dpop_error("invalid_dpop_proof");
    assert_eq!(server.reached(), 1);
}

#[tokio::test]
async fn a_replayed_jti_is_refused_by_a_clone_of_the_guard_sharing_its_cache() {
    // Two guards given one replay cache stand for two nodes sharing one (Redis).
    let shared = Arc::new(dpop::MemoryReplayCache::default());
    let a = Server::new(dpop::Config::default().replay_cache(shared.clone()));
    let b = Server::new(dpop::Config::default().replay_cache(shared.clone()));
    let proof = Client::ec1().proof("POST", HTU, "bound");
    assert_eq!(a.dpop("bound", &[&proof]).await.status, 200);
    b.dpop("bound", &[&proof])
        .await
        .assert_dpop_error("invalid_dpop_proof");
    assert_eq!(shared.len(), 1);
}

#[tokio::test]
async fn an_old_iat_is_refused() {
    let server = Server::new(dpop::Config::default());
    let mut claims = claims("POST", HTU, "bound");
    claims["iat"] = json!(now() - 61);
    let proof = Client::ec1().sign(&claims);
    server
        .dpop("bound", &[&proof])
        .await
        .assert_dpop_error("invalid_dpop_proof");
    // Within a longer window, the same proof is good.
    let patient =
        Server::new(dpop::Config::default().max_proof_age(std::time::Duration::from_secs(300)));
    assert_eq!(patient.dpop("bound", &[&proof]).await.status, 200);
}

#[tokio::test]
async fn an_iat_too_far_in_the_future_is_refused() {
    let server = Server::new(dpop::Config::default());
    let client = Client::ec1();
    let mut claims = claims("POST", HTU, "bound");
    claims["iat"] = json!(now() + 30);
    server
        .dpop("bound", &[&client.sign(&claims)])
        .await
        .assert_dpop_error("invalid_dpop_proof");
    // A clock a little ahead, within the skew, is fine.
    let mut claims = super::claims("POST", HTU, "bound");
    claims["iat"] = json!(now() + 3);
    assert_eq!(
        server.dpop("bound", &[&client.sign(&claims)]).await.status,
        200
    );
}

#[tokio::test]
async fn a_proof_signed_by_another_key_than_the_tokens_is_refused() {
    let server = Server::new(dpop::Config::default());
    let proof = Client::ec2().proof("POST", HTU, "bound");
    let answer = server.dpop("bound", &[&proof]).await;
    answer.assert_dpop_error("invalid_token");
    assert!(answer.challenge().contains("key binding"));
    assert_eq!(server.reached(), 0);
}

#[tokio::test]
async fn a_missing_ath_is_refused() {
    let server = Server::new(dpop::Config::default());
    let mut claims = claims("POST", HTU, "bound");
    claims.as_object_mut().unwrap().remove("ath");
    let proof = Client::ec1().sign(&claims);
    server
        .dpop("bound", &[&proof])
        .await
        .assert_dpop_error("invalid_dpop_proof");
}

#[tokio::test]
async fn a_wrong_ath_is_refused() {
    let server = Server::new(dpop::Config::default());
    // A proof made for another token, sent with this one.
    let proof = Client::ec1().proof("POST", HTU, "another-token");
    server
        .dpop("bound", &[&proof])
        .await
        .assert_dpop_error("invalid_dpop_proof");
}

#[tokio::test]
async fn an_alg_none_proof_is_refused() {
    let server = Server::new(dpop::Config::default());
    let client = Client::ec1();
    let header = json!({"typ": "dpop+jwt", "alg": "none", "jwk": client.jwk_json()});
    let proof = raw_jws(&header, &claims("POST", HTU, "bound"), b"");
    server
        .dpop("bound", &[&proof])
        .await
        .assert_dpop_error("invalid_dpop_proof");
}

#[tokio::test]
async fn an_hmac_proof_is_refused() {
    let server = Server::new(dpop::Config::default());
    // Signed with the public key's bytes as the secret, and with a symmetric key in `jwk`.
    let client = Client::ec1();
    let claims = claims("POST", HTU, "bound");
    let secret = client.jwk_json()["x"].as_str().unwrap().to_owned();
    let hmac = |jwk: Value| {
        let mut header = Header::new(Algorithm::HS256);
        header.typ = Some("dpop+jwt".to_owned());
        let mut header = serde_json::to_value(header).unwrap();
        header["jwk"] = jwk;
        let key = EncodingKey::from_secret(secret.as_bytes());
        let message = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = jsonwebtoken::crypto::sign(message.as_bytes(), &key, Algorithm::HS256);
        format!("{message}.{}", signature.unwrap())
    };
    for jwk in [
        client.jwk_json(),
        json!({"kty": "oct", "k": URL_SAFE_NO_PAD.encode(&secret)}),
    ] {
        let proof = hmac(jwk);
        server
            .dpop("bound", &[&proof])
            .await
            .assert_dpop_error("invalid_dpop_proof");
    }
}

#[tokio::test]
async fn a_jwk_with_private_parts_is_refused() {
    let server = Server::new(dpop::Config::default());
    let client = Client::ec1();
    let mut jwk = client.jwk_json();
    jwk["d"] = json!("Dif7-ONQMnNEdWIYc2VjcmV0LXNjYWxhci1oZXJlLW5vdC1yZWFs");
    let mut header = Header::new(Algorithm::ES256);
    header.typ = Some("dpop+jwt".to_owned());
    let mut header = serde_json::to_value(header).unwrap();
    header["jwk"] = jwk;
    // Signed for real, so that only the private member is wrong.
    let message = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims("POST", HTU, "bound").to_string())
    );
    let signature =
        jsonwebtoken::crypto::sign(message.as_bytes(), &client.key, Algorithm::ES256).unwrap();
    let proof = format!("{message}.{signature}");
    server
        .dpop("bound", &[&proof])
        .await
        .assert_dpop_error("invalid_dpop_proof");
}

#[tokio::test]
async fn a_bearer_token_presented_as_dpop_is_refused() {
    let server = Server::new(dpop::Config::default());
    let proof = Client::ec1().proof("POST", HTU, "plain");
    let answer = server.dpop("plain", &[&proof]).await;
    answer.assert_dpop_error("invalid_token");
    assert_eq!(server.reached(), 0);
}

#[tokio::test]
async fn a_dpop_bound_token_presented_as_bearer_is_refused() {
    let server = Server::new(dpop::Config::default());
    let proof = Client::ec1().proof("POST", HTU, "bound");
    let request = Request::post("/mcp")
        .header("authorization", "Bearer bound")
        .header("dpop", proof);
    let answer = server.send(request).await;
    assert_eq!(answer.status, 401);
    assert!(
        answer.challenge().starts_with(&format!(
            r#"Bearer resource_metadata="{METADATA}", scope="mcp", error="invalid_token""#
        )),
        "{}",
        answer.challenge()
    );
    // Without DPoP configured too: a bound token is never a bearer token.
    let bearer_only = Guard::builder(RESOURCE)
        .authorization_server("https://auth.example.com")
        .build(Tokens::new())
        .unwrap();
    let server = Server::with(bearer_only);
    let answer = server
        .send(Request::post("/mcp").header("authorization", "Bearer bound"))
        .await;
    assert_eq!(answer.status, 401);
    assert!(answer.challenge().contains(r#"error="invalid_token""#));
    assert_eq!(server.reached(), 0);
}

#[tokio::test]
async fn two_dpop_headers_are_refused() {
    let server = Server::new(dpop::Config::default());
    let client = Client::ec1();
    let (a, b) = (
        client.proof("POST", HTU, "bound"),
        client.proof("POST", HTU, "bound"),
    );
    server
        .dpop("bound", &[&a, &b])
        .await
        .assert_dpop_error("invalid_dpop_proof");
    // And none at all.
    server
        .dpop("bound", &[])
        .await
        .assert_dpop_error("invalid_dpop_proof");
    assert_eq!(server.reached(), 0);
}

#[tokio::test]
async fn the_valid_case_behind_a_proxy_names_the_public_origin() {
    // The proxy forwards `https://gateway.example.net/mcp?x=1` to `http://10.0.0.5:8080/mcp`,
    // with its own Host and forwarded headers, none of which the guard believes.
    let server = Server::new(dpop::Config::default().public_origin("https://gateway.example.net"));
    let client = Client::ec1();
    let forwarded = |proof: String| {
        Request::post("http://10.0.0.5:8080/mcp?x=1")
            .header("host", "10.0.0.5:8080")
            .header("x-forwarded-host", "evil.example.com")
            .header("authorization", "DPoP bound")
            .header("dpop", proof)
    };
    let good = client.proof("POST", "https://gateway.example.net/mcp?x=1", "bound");
    let answer = server.send(forwarded(good)).await;
    assert_eq!(answer.status, 200, "{}", answer.challenge());
    for htu in [
        "http://10.0.0.5:8080/mcp",
        "https://evil.example.com/mcp",
        HTU,
    ] {
        let answer = server
            .send(forwarded(client.proof("POST", htu, "bound")))
            .await;
        answer.assert_dpop_error("invalid_dpop_proof");
    }
    assert_eq!(server.reached(), 1);
}

#[tokio::test]
async fn without_credentials_both_schemes_are_offered_and_required_dpop_offers_one() {
    let both = Server::new(dpop::Config::default());
    let answer = both.send(Request::post("/mcp")).await;
    assert_eq!(answer.status, 401);
    assert_eq!(
        answer.challenge(),
        format!(
            r#"Bearer resource_metadata="{METADATA}", scope="mcp", DPoP algs="{ALGS}", resource_metadata="{METADATA}", scope="mcp""#
        )
    );
    // Bearer tokens bound to no key still work beside DPoP.
    let answer = both
        .send(Request::post("/mcp").header("authorization", "Bearer plain"))
        .await;
    assert_eq!(answer.status, 200);

    let required = Server::new(dpop::Config::default().required(true));
    let expected = format!(r#"DPoP algs="{ALGS}", resource_metadata="{METADATA}", scope="mcp""#);
    for request in [
        Request::post("/mcp"),
        Request::post("/mcp").header("authorization", "Bearer plain"),
    ] {
        let answer = required.send(request).await;
        assert_eq!(answer.status, 401);
        assert_eq!(answer.challenge(), expected);
    }
    assert_eq!(required.reached(), 0);
}

#[tokio::test]
async fn check_without_the_request_refuses_dpop_and_check_request_accepts_it() {
    let guard = Guard::builder(RESOURCE)
        .authorization_server("https://auth.example.com")
        .dpop(dpop::Config::default())
        .build(Tokens::new())
        .unwrap();
    let client = Client::ec1();
    let mut headers = HeaderMap::new();
    headers.insert("authorization", "DPoP bound".parse().unwrap());
    headers.insert("dpop", client.proof("POST", HTU, "bound").parse().unwrap());
    let refusal = guard.check(&headers).await.unwrap_err();
    assert_eq!(
        refusal.kind(),
        mcp_streamable_auth::RefusalKind::InvalidDpopProof
    );
    let uri: http::Uri = "/mcp".parse().unwrap();
    let principal = guard
        .check_request(&http::Method::POST, &uri, &headers)
        .await
        .unwrap();
    assert_eq!(principal.jkt, Some(client.jkt()));
    assert_eq!(principal.key().jkt(), Some(client.jkt().as_str()));
}

#[tokio::test]
async fn a_replay_cache_that_cannot_tell_is_a_503() {
    struct Down;
    impl dpop::ReplayCache for Down {
        fn first_use<'a>(
            &'a self,
            _: &'a dpop::ProofId,
            _: std::time::Duration,
        ) -> dpop::ReplayFuture<'a> {
            Box::pin(async {
                Err(mcp_streamable_auth::ReplayError::new().with_source("redis down"))
            })
        }
    }
    let server = Server::new(dpop::Config::default().replay_cache(Down));
    let proof = Client::ec1().proof("POST", HTU, "bound");
    let answer = server.dpop("bound", &[&proof]).await;
    assert_eq!(answer.status, 503);
    assert!(!answer.headers.contains_key("www-authenticate"));
    assert_eq!(server.reached(), 0);
}
