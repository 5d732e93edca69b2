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

fn hmac(secret: &[u8], bytes: &[u8]) -> ring::hmac::Tag {
    ring::hmac::sign(
        &ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret),
        bytes,
    )
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
    let want = hex(hmac(&secret, bytes).as_ref());
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
pub fn seal(path: &Path) -> Result<(), ComputerError> {
    seal_bytes(path, &std::fs::read(path).unwrap_or_default())
}

/// Seals `bytes` as the content of the config at `path`: what the user was shown
/// and accepted (`deskpilot config trust`), so a save in between is not sealed.
///
/// Errors: as [`seal`].
pub fn seal_bytes(path: &Path, bytes: &[u8]) -> Result<(), ComputerError> {
    let lock = path.with_extension("keyring.lock");
    let secret = match deskpilot_os::keyring::user_secret(SEAL_SECRET, &lock) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(error = %e, "no kernel keyring: the config is not sealed");
            return Ok(());
        }
    };
    deskpilot_os::write_private_atomic(
        &seal_path(path),
        hex(hmac(&secret, bytes).as_ref()).as_bytes(),
    )
    .map_err(|e| ComputerError::internal(format!("cannot write the config's seal: {e}")))?;
    deskpilot_os::keyring::user_secret(&marker(path), &lock).map_err(|e| {
        ComputerError::new(
            ErrorCode::Internal,
            format!("cannot mark the config as sealed in the kernel keyring: {e}"),
        )
    })?;
    Ok(())
}
