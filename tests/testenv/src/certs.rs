//! Key material for one control plane, generated fresh every start so no
//! secret is shared between runs or checked in.

use std::net::Ipv4Addr;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};

use crate::control_plane::KUBERNETES_SERVICE_IP;

pub(crate) struct Pki {
    pub ca_pem: String,
    pub ca_der: Vec<u8>,
    /// Serves both kube-apiserver and kube-controller-manager, so one CA
    /// verifies every endpoint the harness probes.
    pub serving_cert_pem: String,
    pub serving_key_pem: String,
    /// Signs ServiceAccount tokens (TokenRequest API)...
    pub service_account_key_pem: String,
    /// ...and verifies them.
    pub service_account_public_key_pem: String,
}

/// `apiserver_address`: an address the API server serves on besides loopback.
pub(crate) fn generate(apiserver_address: Option<Ipv4Addr>) -> anyhow::Result<Pki> {
    let ca_key = KeyPair::generate()?;
    let mut ca_params = CertificateParams::default();
    ca_params.distinguished_name = name("testenv-ca");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca = ca_params.self_signed(&ca_key)?;

    let serving_key = KeyPair::generate()?;
    // Every name a pod may use for the API server: the `kubernetes` Service's
    // ClusterIP and DNS names, besides what clients on this machine use.
    let mut names = vec![
        "127.0.0.1".to_owned(),
        "localhost".to_owned(),
        KUBERNETES_SERVICE_IP.to_string(),
        "kubernetes".to_owned(),
        "kubernetes.default".to_owned(),
        "kubernetes.default.svc".to_owned(),
        "kubernetes.default.svc.cluster.local".to_owned(),
    ];
    names.extend(apiserver_address.map(|address| address.to_string()));
    let mut serving_params = CertificateParams::new(names)?;
    serving_params.distinguished_name = name("kube-apiserver");
    serving_params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    serving_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let serving = serving_params.signed_by(&serving_key, &ca, &ca_key)?;

    let service_account_key = KeyPair::generate()?;

    Ok(Pki {
        ca_pem: ca.pem(),
        ca_der: ca.der().to_vec(),
        serving_cert_pem: serving.pem(),
        serving_key_pem: serving_key.serialize_pem(),
        service_account_key_pem: service_account_key.serialize_pem(),
        service_account_public_key_pem: service_account_key.public_key_pem(),
    })
}

fn name(common_name: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, common_name);
    dn
}
