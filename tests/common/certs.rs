//! Certificates for the TLS tests, made with the `openssl` command in a temporary directory:
//! a CA, certificates it signs (for 127.0.0.1 and localhost), one signed by another CA, and
//! an expired one. Keystores are PEM files as KIP-651 reads them: the PKCS#8 key (encrypted
//! with a password where asked), then the certificate chain.

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Certs {
    pub dir: tempfile::TempDir,
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("openssl (Debian's package) runs");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Certs {
    /// A CA (`ca.pem`) and a second one (`other-ca.pem`) nobody trusts.
    pub fn new() -> Certs {
        let dir = tempfile::tempdir().unwrap();
        for ca in ["ca", "other-ca"] {
            openssl(
                dir.path(),
                &[
                    "req",
                    "-x509",
                    "-newkey",
                    "ec",
                    "-pkeyopt",
                    "ec_paramgen_curve:prime256v1",
                    "-nodes",
                    "-keyout",
                    &format!("{ca}.key"),
                    "-out",
                    &format!("{ca}.pem"),
                    "-days",
                    "30",
                    "-subj",
                    &format!("/O=gregor/CN={ca}"),
                ],
            );
        }
        std::fs::write(
            dir.path().join("ext"),
            "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n",
        )
        .unwrap();
        Certs { dir }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn ca(&self) -> String {
        self.path("ca.pem").display().to_string()
    }

    /// Makes `<name>.pem` (the certificate), `<name>.key` (its PKCS#8 key, encrypted with
    /// `password` if given) and `<name>.keystore.pem` (key then certificate), signed by
    /// `ca`, for `subject`, valid for `days` (negative: expired). Returns the keystore's path.
    pub fn issue(
        &self,
        name: &str,
        subject: &str,
        ca: &str,
        days: i32,
        password: Option<&str>,
    ) -> String {
        let d = self.dir.path();
        let (key, csr, pem) = (
            format!("{name}.key"),
            format!("{name}.csr"),
            format!("{name}.pem"),
        );
        openssl(
            d,
            &[
                "req",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-keyout",
                &format!("{name}.plain.key"),
                "-out",
                &csr,
                "-subj",
                subject,
            ],
        );
        openssl(
            d,
            &[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                &format!("{ca}.pem"),
                "-CAkey",
                &format!("{ca}.key"),
                "-CAcreateserial",
                "-out",
                &pem,
                "-days",
                &days.to_string(),
                "-extfile",
                "ext",
            ],
        );
        let mut topk8 = vec!["pkcs8", "-topk8", "-in"];
        let plain = format!("{name}.plain.key");
        topk8.push(&plain);
        topk8.extend(["-out", &key]);
        let pass = password.map(|p| format!("pass:{p}"));
        match &pass {
            Some(p) => topk8.extend(["-v2", "aes-256-cbc", "-passout", p]),
            None => topk8.push("-nocrypt"),
        }
        openssl(d, &topk8);
        let keystore = d.join(format!("{name}.keystore.pem"));
        let text = std::fs::read_to_string(d.join(&key)).unwrap()
            + &std::fs::read_to_string(d.join(&pem)).unwrap();
        std::fs::write(&keystore, text).unwrap();
        keystore.display().to_string()
    }
}
