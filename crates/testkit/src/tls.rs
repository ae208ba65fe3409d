//! Certificates made in the test, for servers that speak TLS: a PostgreSQL
//! cluster of the test's own with `ssl=on`, a TLS proxy in front of the
//! MongoDB-wire server. Nothing is read from the machine's trust store.

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose};

/// A CA that signs server certificates.
pub struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl Ca {
    pub fn new(name: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
        Ca { issuer: CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap() }
    }

    /// The CA's certificate, as PEM (what a client is told to trust).
    pub fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// What signs: for certificates made other than by [`Ca::server_cert`].
    pub fn issuer(&self) -> &CertifiedIssuer<'static, KeyPair> {
        &self.issuer
    }

    /// A server certificate for `names` (DNS names or IP addresses) and its key, as PEM.
    pub fn server_cert(&self, names: &[&str]) -> (String, String) {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut params = CertificateParams::new(names).unwrap();
        params.distinguished_name.push(DnType::CommonName, "ghbench test server");
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    }
}
