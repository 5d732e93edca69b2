//! Tamper evidence for the config file (docs/ARCHITECTURE.md §7.17): the user's
//! channels (`deskpilot config set|unset|trust`, at a terminal) seal the file's bytes
//! with HMAC-SHA256 under a secret kept in the kernel's user keyring, and mark its
//! path as managed there. A managed config whose seal does not verify (edited by an
//! app the agent drives, its seal removed, or the file deleted) was changed outside
//! deskpilot: it never widens the policy ([`super::Config::changed_outside`]).
//!
//! A config never sealed (written by hand, never touched by `deskpilot config`) is
//! taken as it is. After a reboot the keyring is empty: a config with a seal file
//! then reads as changed until the user accepts it again (`deskpilot config trust`).

use std::path::{Path, PathBuf};

use deskpilot_protocol::Result;
use deskpilot_protocol::{ComputerError, ErrorCode};

/// The keyring secret seals are made with.
const SEAL_SECRET: &str = "deskpilot:config-seal:v1";

/// Whether a config file may be taken as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SealState {
    /// Never sealed on this boot (or no keyring): taken as written.
    Unmanaged,
    /// Sealed by the user's channel and unchanged since.
    Sealed,
    /// Sealed once, changed since by something else (or its seal removed, or the
    /// file deleted).
    Changed,
}

/// The seal file beside `path`: `config.toml.seal`.
pub fn seal_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".seal");
    path.with_file_name(name)
}

/// The keyring entry that marks `path` as managed.
fn marker(path: &Path) -> String {
    format!(
        "deskpilot:config-managed:{:016x}",
        deskpilot_policy::approval::stable_hash(&path.display().to_string())
    )
}

/// HMAC-SHA256 (RFC 2104) of `bytes` under `secret`: 32 bytes.
fn hmac(secret: &[u8], bytes: &[u8]) -> [u8; 32] {
    use hmac::{KeyInit as _, Mac as _};
    // HMAC takes a key of any length (longer ones are hashed first): never an error.
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret)
        .expect("HMAC accepts keys of every length");
    mac.update(bytes);
    mac.finalize().into_bytes().into()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The state of the config at `path` whose content is `bytes` (`None`: no file).
pub fn seal_state(path: &Path, bytes: Option<&[u8]>) -> SealState {
    match deskpilot_os::keyring::find_user_secret(&marker(path)) {
        Ok(Some(_)) => {}
        // A seal file that nothing in the keyring vouches for (after a reboot, or
        // written by another program) proves nothing: the user accepts it again.
        _ if seal_path(path).exists() => return SealState::Changed,
        _ => return SealState::Unmanaged,
    }
    let Ok(Some(secret)) = deskpilot_os::keyring::find_user_secret(SEAL_SECRET) else {
        return SealState::Changed;
    };
    let Some(bytes) = bytes else {
        return SealState::Changed;
    };
    let Ok(seal) = std::fs::read_to_string(seal_path(path)) else {
        return SealState::Changed;
    };
    let want = hex(&hmac(&secret, bytes));
    use subtle::ConstantTimeEq as _;
    if bool::from(want.as_bytes().ct_eq(seal.trim().as_bytes())) {
        SealState::Sealed
    } else {
        SealState::Changed
    }
}

/// Seals the config at `path` as it is now (the user's channel just wrote it).
/// Without a kernel keyring the file stays unsealed (a warning is logged): there is
/// then no tamper evidence.
///
/// Errors: `COMPUTER_INTERNAL` when the seal file cannot be written.
pub fn seal(path: &Path) -> Result<()> {
    seal_bytes(path, &std::fs::read(path).unwrap_or_default())
}

/// Seals `bytes` as the content of the config at `path`: what the user was shown
/// and accepted (`deskpilot config trust`), so a save in between is not sealed.
///
/// Errors: as [`seal`].
pub fn seal_bytes(path: &Path, bytes: &[u8]) -> Result<()> {
    let lock = path.with_extension("keyring.lock");
    let secret = match deskpilot_os::keyring::user_secret(SEAL_SECRET, &lock) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(error = %e, "no kernel keyring: the config is not sealed");
            return Ok(());
        }
    };
    deskpilot_os::write_private_atomic(&seal_path(path), hex(&hmac(&secret, bytes)).as_bytes())
        .map_err(|e| ComputerError::internal(format!("cannot write the config's seal: {e}")))?;
    deskpilot_os::keyring::user_secret(&marker(path), &lock).map_err(|e| {
        ComputerError::new(
            ErrorCode::Internal,
            format!("cannot mark the config as sealed in the kernel keyring: {e}"),
        )
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{hex, hmac};

    /// RFC 4231's HMAC-SHA256 test cases 1, 2, 4 and 6 (a key longer than the block):
    /// the seal's bytes are the standard MAC, so seals written before stay valid.
    #[test]
    fn hmac_matches_rfc_4231() {
        let long_key = [0xaa_u8; 131];
        let cases: [(&[u8], &[u8], &str); 4] = [
            (
                &[0x0b; 20],
                b"Hi There",
                "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
            ),
            (
                b"Jefe",
                b"what do ya want for nothing?",
                "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
            ),
            (
                &[
                    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22,
                    23, 24, 25,
                ],
                &[0xcd; 50],
                "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b",
            ),
            (
                &long_key,
                b"Test Using Larger Than Block-Size Key - Hash Key First",
                "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
            ),
        ];
        for (key, data, want) in cases {
            assert_eq!(hex(&hmac(key, data)), want, "key of {} bytes", key.len());
        }
    }
}
