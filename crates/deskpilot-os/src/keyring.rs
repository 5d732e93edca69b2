//! Secrets kept in the Linux kernel's user keyring (`keyrings(7)`, through
//! `linux-keyutils`), never in a file: an application the agent drives can open any
//! file of the user (a text editor saving over `approvals.json`), but only a process
//! that calls `keyctl` reads the keyring. The user keyring lives as long as the user
//! has processes; after a reboot a new secret is made, and what was sealed with the
//! old one no longer verifies (it fails closed).

use std::io;
use std::path::Path;

/// Bytes of a secret: 32 (256 bits).
pub const SECRET_BYTES: usize = 32;

/// The secret named `description` in this user's keyring, made (from
/// `/dev/urandom`) and added when there is none. `lock` is a file locked while the
/// secret is made, so two processes never make two.
///
/// Errors: `Unsupported` where the kernel has no keyrings (or a container forbids
/// `add_key`), else the error of the lock or of the keyring call.
#[cfg(target_os = "linux")]
pub fn user_secret(description: &str, lock: &Path) -> io::Result<Vec<u8>> {
    use linux_keyutils::{KeyRing, KeyRingIdentifier};
    let ring = KeyRing::from_special_id(KeyRingIdentifier::User, true).map_err(unsupported)?;
    if let Some(s) = find_user_secret(description)? {
        return Ok(s);
    }
    let _guard = crate::fs::lock_file(lock)?;
    if let Some(s) = find_user_secret(description)? {
        return Ok(s);
    }
    let hex = crate::fs::random_hex(SECRET_BYTES)?;
    ring.add_key(description, hex.as_bytes()).map_err(other)?;
    Ok(hex.into_bytes())
}

/// The secret named `description` in this user's keyring, if there is one; never
/// makes one.
///
/// Errors: `Unsupported` where the kernel has no keyrings, else the keyring call's.
#[cfg(target_os = "linux")]
pub fn find_user_secret(description: &str) -> io::Result<Option<Vec<u8>>> {
    use linux_keyutils::{KeyError, KeyRing, KeyRingIdentifier};
    let ring = KeyRing::from_special_id(KeyRingIdentifier::User, true).map_err(unsupported)?;
    // A key that expired, or was invalidated and not yet collected (the kernel
    // collects asynchronously), is no entry.
    let gone = |e: &KeyError| {
        matches!(
            e,
            KeyError::KeyDoesNotExist | KeyError::KeyExpired | KeyError::KeyRevoked
        )
    };
    match ring.search(description) {
        Ok(k) => match k.read_to_vec() {
            Ok(v) => Ok(Some(v)),
            Err(e) if gone(&e) => Ok(None),
            Err(e) => Err(other(e)),
        },
        Err(e) if gone(&e) => Ok(None),
        Err(e) => Err(other(e)),
    }
}

/// Adds the entry `description` to this user's keyring for `ttl_secs` seconds (a
/// flag that a file cannot roll back, such as "approval X was used").
///
/// Errors: `Unsupported` where the kernel has no keyrings, else the keyring call's.
#[cfg(target_os = "linux")]
pub fn set_user_flag(description: &str, ttl_secs: usize) -> io::Result<()> {
    use linux_keyutils::{KeyRing, KeyRingIdentifier};
    let ring = KeyRing::from_special_id(KeyRingIdentifier::User, true).map_err(unsupported)?;
    let key = ring.add_key(description, b"1").map_err(other)?;
    key.set_timeout(ttl_secs).map_err(other)
}

/// Sets the entry `description` of this user's keyring to `value` (replacing one
/// there), with no expiry: a record that a file cannot roll back or remove, such as
/// the last stop. Read it back with [`find_user_secret`].
///
/// Errors: `Unsupported` where the kernel has no keyrings, else the keyring call's.
#[cfg(target_os = "linux")]
pub fn set_user_entry(description: &str, value: &[u8]) -> io::Result<()> {
    use linux_keyutils::{KeyRing, KeyRingIdentifier};
    let ring = KeyRing::from_special_id(KeyRingIdentifier::User, true).map_err(unsupported)?;
    ring.add_key(description, value).map_err(other)?;
    Ok(())
}

/// Off Linux there is no kernel keyring: `Unsupported`.
#[cfg(not(target_os = "linux"))]
pub fn set_user_entry(description: &str, value: &[u8]) -> io::Result<()> {
    let _ = (description, value);
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "no kernel keyring on this system",
    ))
}

/// Removes the entry `description` from this user's keyring; a missing entry (or
/// one removed and not yet collected) is not an error.
///
/// Errors: `Unsupported` where the kernel has no keyrings, else the keyring call's.
#[cfg(target_os = "linux")]
pub fn clear_user_flag(description: &str) -> io::Result<()> {
    use linux_keyutils::{KeyError, KeyRing, KeyRingIdentifier};
    let ring = KeyRing::from_special_id(KeyRingIdentifier::User, true).map_err(unsupported)?;
    // An entry invalidated a moment ago may still be found until the kernel
    // collects it (asynchronously), and then answers "revoked": it is gone.
    let gone = |e: &KeyError| {
        matches!(
            e,
            KeyError::KeyDoesNotExist | KeyError::KeyExpired | KeyError::KeyRevoked
        )
    };
    match ring.search(description) {
        Ok(k) => match k.invalidate() {
            Err(e) if !gone(&e) => Err(other(e)),
            _ => Ok(()),
        },
        Err(e) if gone(&e) => Ok(()),
        Err(e) => Err(other(e)),
    }
}

/// Off Linux there is no kernel keyring: `Unsupported`.
#[cfg(not(target_os = "linux"))]
pub fn clear_user_flag(description: &str) -> io::Result<()> {
    let _ = description;
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "no kernel keyring on this system",
    ))
}

/// Off Linux there is no kernel keyring: `Unsupported`.
#[cfg(not(target_os = "linux"))]
pub fn set_user_flag(description: &str, ttl_secs: usize) -> io::Result<()> {
    let _ = (description, ttl_secs);
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "no kernel keyring on this system",
    ))
}

/// Off Linux there is no kernel keyring: `Unsupported`.
#[cfg(not(target_os = "linux"))]
pub fn find_user_secret(description: &str) -> io::Result<Option<Vec<u8>>> {
    let _ = description;
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "no kernel keyring on this system",
    ))
}

/// Off Linux there is no kernel keyring: `Unsupported`.
#[cfg(not(target_os = "linux"))]
pub fn user_secret(description: &str, lock: &Path) -> io::Result<Vec<u8>> {
    let _ = (description, lock);
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "no kernel keyring on this system",
    ))
}

#[cfg(target_os = "linux")]
fn unsupported(e: linux_keyutils::KeyError) -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!("the kernel keyring is not available ({e})"),
    )
}

#[cfg(target_os = "linux")]
fn other(e: linux_keyutils::KeyError) -> io::Error {
    io::Error::other(format!("kernel keyring: {e}"))
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_secret_is_made_once_and_read_back() {
        let d = tempfile::tempdir().unwrap();
        let name = format!(
            "deskpilot-test:{}:{}",
            std::process::id(),
            d.path().display()
        );
        let lock = d.path().join("keyring.lock");
        let a = user_secret(&name, &lock).unwrap();
        let b = user_secret(&name, &lock).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.len(), 2 * SECRET_BYTES);
        let other = user_secret(&format!("{name}:other"), &lock).unwrap();
        assert_ne!(a, other);
        let flag = format!("{name}:flag");
        assert!(find_user_secret(&flag).unwrap().is_none());
        set_user_flag(&flag, 60).unwrap();
        assert!(find_user_secret(&flag).unwrap().is_some());
        clear_user_flag(&flag).unwrap();
        assert!(matches!(find_user_secret(&flag), Ok(None)));
    }
}
