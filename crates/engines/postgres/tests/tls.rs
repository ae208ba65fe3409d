//! TLS to a real PostgreSQL: clusters of the test's own with `ssl=on` and
//! certificates made here, reached through the engine's one `connect()`.

use ghbench_postgres::connect::{connect, describe};
use ghbench_postgres::SPEC;
use ghbench_testkit::throwaway_pg::ThrowawayPg;
use ghbench_testkit::tls::Ca;

/// A cluster with TLS, its certificate for localhost and 127.0.0.1 signed by `ca`.
fn tls_cluster(name: &str, ca: &Ca) -> Option<ThrowawayPg> {
    ThrowawayPg::start_tls(name, Some(ca.server_cert(&["localhost", "127.0.0.1"])))
}

/// What pg_stat_ssl says of this session.
async fn encrypted(client: &tokio_postgres::Client) -> bool {
    client.query_one("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", &[]).await.unwrap().get(0)
}

/// Why connecting to `url` failed (the reason only: the message's URL repeats the settings).
async fn refused(url: &str) -> String {
    match connect(&SPEC, url).await {
        Ok(_) => panic!("{url} connected; it should not have"),
        Err(e) => {
            eprintln!("{url}: {e}");
            e.reason
        }
    }
}

#[tokio::test]
async fn require_encrypts_and_describe_reports_it() {
    let ca = Ca::new("ghbench test CA");
    let Some(pg) = tls_cluster("require", &ca) else { return };
    let url = pg.url_with("sslmode=require");
    let client = connect(&SPEC, &url).await.unwrap();
    assert!(encrypted(&client).await, "sslmode=require connected without TLS");
    let info = describe(&SPEC, &client, &url).await.unwrap();
    let ssl = &info.settings["ssl"];
    assert!(ssl.starts_with("on (TLSv1."), "describe() says ssl = {ssl}");
    // libpq's default, prefer, takes TLS when the server offers it.
    let client = connect(&SPEC, &pg.url_with("application_name=prefer")).await.unwrap();
    assert!(encrypted(&client).await, "no sslmode (prefer) did not use the TLS the server offers");
}

#[tokio::test]
async fn disable_stays_plain_though_the_server_offers_tls() {
    let ca = Ca::new("ghbench test CA");
    let Some(pg) = tls_cluster("disable", &ca) else { return };
    let url = pg.url_with("sslmode=disable");
    let client = connect(&SPEC, &url).await.unwrap();
    assert!(!encrypted(&client).await, "sslmode=disable used TLS");
    assert_eq!(describe(&SPEC, &client, &url).await.unwrap().settings["ssl"], "off");
}

#[tokio::test]
async fn verify_full_trusts_only_the_ca_in_sslrootcert() {
    let ca = Ca::new("ghbench test CA");
    let Some(pg) = tls_cluster("verify-full", &ca) else { return };
    let right = pg.write("right-ca.pem", &ca.pem());
    let wrong = pg.write("wrong-ca.pem", &Ca::new("someone else's CA").pem());

    let client = connect(&SPEC, &pg.url_with(&format!("sslmode=verify-full&sslrootcert={}", right.display()))).await.unwrap();
    assert!(encrypted(&client).await);
    // The same in libpq's key=value form.
    let kv = format!("host=127.0.0.1 port={} user=postgres dbname=postgres sslmode=verify-full sslrootcert='{}'", pg.port, right.display());
    assert!(encrypted(&connect(&SPEC, &kv).await.unwrap()).await);

    let reason = refused(&pg.url_with(&format!("sslmode=verify-full&sslrootcert={}", wrong.display()))).await;
    let expected = format!("the server's certificate is not trusted: it is not signed by the CA in sslrootcert={} (sslmode=verify-full)", wrong.display());
    assert!(reason.contains(&expected), "{reason}");
    // As in libpq, require with a root certificate checks the chain too.
    let reason = refused(&pg.url_with(&format!("sslmode=require&sslrootcert={}", wrong.display()))).await;
    assert!(reason.contains("is not trusted") && reason.contains("(sslmode=require)"), "{reason}");
}

#[tokio::test]
async fn verify_full_checks_the_host_name_and_verify_ca_does_not() {
    let ca = Ca::new("ghbench test CA");
    let Some(pg) = tls_cluster("host-name", &ca) else { return };
    let root = pg.write("ca.pem", &ca.pem());
    // TCP to 127.0.0.1, but the name checked against the certificate is db.example.
    let url = |mode: &str| {
        format!("postgres://postgres@db.example:{}/postgres?hostaddr=127.0.0.1&connect_timeout=5&sslmode={mode}&sslrootcert={}", pg.port, root.display())
    };
    let reason = refused(&url("verify-full")).await;
    assert!(reason.contains("is not valid for the host db.example") && reason.contains("(sslmode=verify-full)"), "{reason}");
    assert!(reason.contains("the certificate names localhost, 127.0.0.1"), "the message should list the names the certificate has: {reason}");
    let client = connect(&SPEC, &url("verify-ca")).await.unwrap();
    assert!(encrypted(&client).await);
}

#[tokio::test]
async fn require_says_when_the_server_offers_no_tls() {
    let Some(pg) = ThrowawayPg::start("no-tls") else { return };
    let reason = refused(&pg.url_with("sslmode=require")).await;
    assert!(reason.contains("the server does not support TLS (sslmode=require)"), "{reason}");
    // prefer falls back to plain text, as libpq's does.
    let client = connect(&SPEC, &pg.url_with("sslmode=prefer")).await.unwrap();
    assert!(!encrypted(&client).await);
}

/// Settings that cannot be honoured stop the connection before any network step.
#[tokio::test]
async fn tls_settings_that_cannot_be_honoured_are_named() {
    // Nothing listens on port 9: each must fail for its setting, not for the network.
    let reason = refused("postgres://u@127.0.0.1:9/x?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem").await;
    assert!(reason.starts_with("sslrootcert /nonexistent/ca.pem: no such file"), "{reason}");
    let reason = refused("postgres://u@127.0.0.1:9/x?sslmode=require&sslcert=/c.pem&sslkey=/k.pem").await;
    assert!(reason.contains("sslcert= is not supported yet"), "{reason}");
    let reason = refused("postgres://u@127.0.0.1:9/x?sslmode=require&sslrootcert=system").await;
    assert!(reason.contains("use sslmode=verify-full"), "{reason}");
    let empty = std::env::temp_dir().join(format!("ghbench-empty-ca-{}.pem", std::process::id()));
    std::fs::write(&empty, "not a certificate\n").unwrap();
    let reason = refused(&format!("postgres://u@127.0.0.1:9/x?sslmode=verify-ca&sslrootcert={}", empty.display())).await;
    let _ = std::fs::remove_file(&empty);
    assert!(reason.contains("no certificate in it"), "{reason}");
}
