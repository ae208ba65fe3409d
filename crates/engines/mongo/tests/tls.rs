//! `tls=true` and `mongodb+srv://` URIs through the engine's one `connect()`.
//! The MongoDB-wire server `just setup` starts speaks no TLS, so the test puts
//! its own TLS-terminating proxy in front of it (certificates made here), on
//! 127.0.0.1: the driver's TLS is real, the server behind it is unchanged.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ghbench_mongo::connect::{connect, describe};
use ghbench_mongo::SPEC;
use ghbench_testkit::mongo_url;
use ghbench_testkit::tls::Ca;
use rcgen::{CertificateParams, KeyPair};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::rustls;

/// A TLS listener on 127.0.0.1 (its certificate signed by `ca`) that hands every
/// connection's bytes to `upstream`; the count is of finished TLS handshakes.
struct Proxy {
    port: u16,
    handshakes: Arc<AtomicUsize>,
}

impl Proxy {
    async fn start(ca: &Ca, upstream: String) -> Proxy {
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap().signed_by(&key, ca.issuer()).unwrap();
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into());
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert.der().clone()], key)
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let handshakes = Arc::new(AtomicUsize::new(0));
        let counted = handshakes.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let (acceptor, upstream, counted) = (acceptor.clone(), upstream.clone(), counted.clone());
                tokio::spawn(async move {
                    // A refused handshake (the wrong-CA case) just ends here.
                    let Ok(mut tls) = acceptor.accept(client).await else { return };
                    counted.fetch_add(1, Ordering::SeqCst);
                    let Ok(mut server) = TcpStream::connect(&upstream).await else { return };
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut server).await;
                });
            }
        });
        Proxy { port, handshakes }
    }

    fn url(&self, ca_file: &std::path::Path) -> String {
        format!("mongodb://127.0.0.1:{}/ghbench?tls=true&tlsCAFile={}&directConnection=true&serverSelectionTimeoutMS=3000", self.port, ca_file.display())
    }
}

/// `host:port` of the running MongoDB-wire server, or `None` (with a message) when it does not answer.
async fn upstream() -> Option<String> {
    let url = mongo_url();
    if let Err(e) = connect(&SPEC, &url).await {
        eprintln!("SKIPPED: no MongoDB-wire server to put TLS in front of: {e}");
        return None;
    }
    let parsed = mongodb::options::ConnectionString::parse(&url).unwrap();
    match parsed.host_info {
        mongodb::options::HostInfo::HostIdentifiers(hosts) => Some(hosts[0].to_string()),
        _ => {
            eprintln!("SKIPPED: MONGODB_URI is a mongodb+srv:// URI; the test needs host:port");
            None
        }
    }
}

/// A PEM file that lives as long as the test.
fn pem_file(pem: &str) -> tempfile::NamedTempFile {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), pem).unwrap();
    file
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_uri_with_tls_ca_file_pings_and_describes() {
    let Some(upstream) = upstream().await else { return };
    let ca = Ca::new("ghbench test CA");
    let proxy = Proxy::start(&ca, upstream).await;
    let ca_file = pem_file(&ca.pem());
    let url = proxy.url(ca_file.path());
    let db = connect(&SPEC, &url).await.unwrap_or_else(|e| panic!("{e}"));
    let info = describe(&SPEC, &db, &url).await.unwrap();
    assert!(!info.version.is_empty(), "{info:?}");
    assert!(proxy.handshakes.load(Ordering::SeqCst) > 0, "connected, but not through the TLS proxy");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_from_another_ca_is_refused_in_words() {
    let Some(upstream) = upstream().await else { return };
    let proxy = Proxy::start(&Ca::new("ghbench test CA"), upstream).await;
    let ca_file = pem_file(&Ca::new("someone else's CA").pem());
    let started = Instant::now();
    let reason = match connect(&SPEC, &proxy.url(ca_file.path())).await {
        Ok(_) => panic!("a server certificate from another CA was accepted"),
        Err(e) => {
            eprintln!("{e}");
            e.reason
        }
    };
    assert!(reason.contains("the server's certificate is not trusted") && reason.contains("tlsCAFile"), "{reason}");
    assert!(!reason.contains("Topology"), "the driver's topology dump should be cut: {reason}");
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
    assert_eq!(proxy.handshakes.load(Ordering::SeqCst), 0);
}

/// No DNS here: the SRV lookup fails (or gives no answer), and the error says which, in time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_srv_lookup_is_named_and_bounded() {
    let started = Instant::now();
    let url = "mongodb+srv://cluster0.ghbench.invalid/ghbench?serverSelectionTimeoutMS=3000";
    let reason = match connect(&SPEC, url).await {
        Ok(_) => panic!("{url} connected"),
        Err(e) => {
            eprintln!("{e}");
            e.reason
        }
    };
    assert!(reason.contains("SRV") && reason.contains("_mongodb._tcp.cluster0.ghbench.invalid"), "{reason}");
    assert!(started.elapsed() < Duration::from_secs(6), "took {:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_against_a_server_without_tls_says_so() {
    let Some(upstream) = upstream().await else { return };
    let url = format!("mongodb://{upstream}/ghbench?tls=true&directConnection=true&serverSelectionTimeoutMS=2000");
    let reason = match connect(&SPEC, &url).await {
        Ok(_) => panic!("tls=true connected to a server without TLS"),
        Err(e) => {
            eprintln!("{e}");
            e.reason
        }
    };
    // A server that answers a TLS hello with plain bytes is named as such; one
    // that does not answer at all (SecantusDB) gets TLS named as the likely cause.
    let named = reason.contains("does not answer in TLS (tls=true)") || reason.contains("check that the server speaks TLS on that port");
    assert!(named, "{reason}");
}
