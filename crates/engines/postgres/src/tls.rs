//! TLS to PostgreSQL with rustls, checking what libpq's `sslmode` and
//! `sslrootcert` ask for, and its failures in words a user can act on.
//!
//! As in libpq: `prefer` and `require` check no certificate, unless a root
//! certificate file is there (`sslrootcert`, else `~/.postgresql/root.crt`):
//! then they check the chain like `verify-ca`. `verify-ca` checks the chain,
//! not the host name; `verify-full` both. `sslrootcert=system` is the system's
//! CAs and asks for `verify-full`. Unlike libpq, an `sslrootcert` file that is
//! named but missing is an error in every mode, never silently no check.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::ssl_params::{SslMode, SslParams};

/// Where the trusted CAs come from.
#[derive(Debug, Clone)]
enum Roots {
    File(PathBuf),
    System,
}

/// What a connection checks of the server's certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    Nothing,
    Chain,
    ChainAndHost,
}

/// The TLS side of one connection string.
#[derive(Debug, Clone)]
pub struct Tls {
    pub mode: SslMode,
    check: Check,
    roots: Option<Roots>,
}

impl Tls {
    /// libpq's rules for what `params` ask (see the module's comment).
    pub fn plan(params: &SslParams) -> Result<Tls, String> {
        let system = params.rootcert.as_deref() == Some("system");
        let mode = params.mode.unwrap_or(if system { SslMode::VerifyFull } else { SslMode::Prefer });
        if system && mode != SslMode::VerifyFull {
            return Err(format!(
                "sslmode={} may not be used with sslrootcert=system (libpq refuses it too): use sslmode=verify-full",
                mode.name()
            ));
        }
        let given = params.rootcert.as_ref().map(|r| if system { Roots::System } else { Roots::File(PathBuf::from(r)) });
        let default_file = || std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".postgresql/root.crt"));
        let (check, roots) = match mode {
            SslMode::Disable => (Check::Nothing, None),
            SslMode::Prefer | SslMode::Require => match given {
                Some(roots) => (Check::Chain, Some(roots)),
                None => match default_file().filter(|f| f.is_file()) {
                    Some(file) => (Check::Chain, Some(Roots::File(file))),
                    None => (Check::Nothing, None),
                },
            },
            SslMode::VerifyCa | SslMode::VerifyFull => {
                let check = if mode == SslMode::VerifyCa { Check::Chain } else { Check::ChainAndHost };
                match given.or_else(|| default_file().map(Roots::File)) {
                    Some(roots) => (check, Some(roots)),
                    None => return Err(format!("sslmode={} needs the CA's certificate: give sslrootcert=FILE (HOME is not set, so ~/.postgresql/root.crt cannot be read)", mode.name())),
                }
            }
        };
        Ok(Tls { mode, check, roots })
    }

    /// The rustls connector; reads the CA file (or the system's CAs) now.
    pub fn connector(&self) -> Result<MakeRustlsConnect, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS setup: {e}"))?;
        let config = match (self.check, &self.roots) {
            (Check::ChainAndHost, Some(roots)) => builder.with_root_certificates(self.load(roots)?),
            (Check::Chain, Some(roots)) => {
                let verifier = Verifier { roots: Some(Arc::new(self.load(roots)?)), provider };
                builder.dangerous().with_custom_certificate_verifier(Arc::new(verifier))
            }
            _ => builder.dangerous().with_custom_certificate_verifier(Arc::new(Verifier { roots: None, provider })),
        };
        let mut config = config.with_no_client_auth();
        // PostgreSQL 17 wants it for sslnegotiation=direct; older servers ignore it.
        config.alpn_protocols = vec![b"postgresql".to_vec()];
        Ok(MakeRustlsConnect::new(config))
    }

    fn load(&self, roots: &Roots) -> Result<RootCertStore, String> {
        let mut store = RootCertStore::empty();
        match roots {
            Roots::System => {
                let found = rustls_native_certs::load_native_certs();
                let (added, _) = store.add_parsable_certificates(found.certs);
                if added == 0 {
                    let why = found.errors.first().map(|e| format!(" ({e})")).unwrap_or_default();
                    return Err(format!("sslrootcert=system: this machine's CA store has no certificates{why}; install ca-certificates or give sslrootcert=FILE"));
                }
            }
            Roots::File(file) => {
                let shown = file.display();
                let unreadable = |e: rustls::pki_types::pem::Error| match e {
                    rustls::pki_types::pem::Error::Io(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        format!("sslrootcert {shown}: no such file; give the file with the CA certificate (PEM) that signed the server's, or leave sslrootcert out and use sslmode=require to encrypt without checking")
                    }
                    e => format!("sslrootcert {shown}: cannot read it: {e}"),
                };
                for cert in CertificateDer::pem_file_iter(file).map_err(unreadable)? {
                    store.add(cert.map_err(unreadable)?).map_err(|e| format!("sslrootcert {shown}: a certificate in it is not usable: {e}"))?;
                }
                if store.is_empty() {
                    return Err(format!("sslrootcert {shown}: no certificate in it (expected PEM, -----BEGIN CERTIFICATE-----)"));
                }
            }
        }
        Ok(store)
    }

    /// What went wrong, in words, when `error` is about TLS; `None` otherwise.
    pub fn explain(&self, error: &tokio_postgres::Error) -> Option<String> {
        let mode = self.mode.name();
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
        while let Some(e) = source {
            // io::Error hides its inner error from source(): look inside.
            let inner = e.downcast_ref::<std::io::Error>().and_then(|io| io.get_ref()).map(|i| i as &(dyn std::error::Error + 'static));
            if let Some(tls) = inner.unwrap_or(e).downcast_ref::<rustls::Error>() {
                return Some(self.explain_tls(tls));
            }
            if e.to_string() == "server does not support TLS" {
                return Some(format!(
                    "the server does not support TLS (sslmode={mode}); turn ssl on in the server, or use sslmode=prefer or disable to connect unencrypted"
                ));
            }
            source = e.source();
        }
        None
    }

    fn explain_tls(&self, error: &rustls::Error) -> String {
        let mode = format!("sslmode={}", self.mode.name());
        let cas = match &self.roots {
            Some(Roots::File(file)) => format!("the CA in sslrootcert={}", file.display()),
            Some(Roots::System) => "any CA this machine trusts (sslrootcert=system)".to_string(),
            None => "a trusted CA".to_string(),
        };
        let rustls::Error::InvalidCertificate(cert) = error else {
            return format!("the TLS handshake failed ({mode}): {error}");
        };
        match cert {
            CertificateError::UnknownIssuer => {
                format!("the server's certificate is not trusted: it is not signed by {cas} ({mode}); give the CA that signed it with sslrootcert=FILE")
            }
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                let names = match cert {
                    CertificateError::NotValidForNameContext { expected, presented } => {
                        let presented: Vec<&str> = presented.iter().map(|name| bare(name)).collect();
                        format!("host {} but the certificate names {}", expected.to_str(), presented.join(", "))
                    }
                    _ => "host name".to_string(),
                };
                format!("the server's certificate is not valid for the {names} ({mode}); connect by a name the certificate lists, or use sslmode=verify-ca to check only that {cas} signed it")
            }
            CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                format!("the server's certificate has expired ({mode}); the server needs a new one")
            }
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                format!("the server's certificate is not valid yet ({mode}); check this machine's clock")
            }
            other => format!("the server's certificate was refused ({mode}): {other:?}"),
        }
    }
}

/// `localhost` of rustls's `DnsName("localhost")` (and `IpAddress(127.0.0.1)`).
fn bare(name: &str) -> &str {
    match name.split_once('(') {
        Some((_, inner)) => inner.trim_end_matches(')').trim_matches('"'),
        None => name,
    }
}

/// The chain against `roots` without the host name (verify-ca, and require
/// with a root file), or nothing at all (`roots` = `None`: prefer, require).
/// The handshake's signatures are checked either way.
#[derive(Debug)]
struct Verifier {
    roots: Option<Arc<RootCertStore>>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if let Some(roots) = &self.roots {
            let cert = rustls::server::ParsedCertificate::try_from(end_entity)?;
            let algorithms = self.provider.signature_verification_algorithms.all;
            rustls::client::verify_server_cert_signed_by_trust_anchor(&cert, roots, intermediates, now, algorithms)?;
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(&self, message: &[u8], cert: &CertificateDer<'_>, dss: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(&self, message: &[u8], cert: &CertificateDer<'_>, dss: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}
