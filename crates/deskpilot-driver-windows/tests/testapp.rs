//! The Windows driver against its Win32 test app under Wine (docs/ARCHITECTURE.md
//! §6b): read the tree, click, toggle, select, set a text, open a menu, each
//! checked against what the app printed. Each test asserts the method Wine 8.0
//! offers (MSAA or the control's own message or the keyboard), so it states exactly
//! what this Wine provides.

#![cfg(windows)]

mod common;

use common::*;
use deskpilot_core::{Op, Role, State};
use deskpilot_driver_windows::WindowsDriver;
use deskpilot_protocol::Driver;
use deskpilot_protocol::types::*;

fn act(
    window: &WindowInfo,
    handle: &deskpilot_core::Handle,
    op: Op,
    value: Option<&str>,
) -> ActParams {
    ActParams {
        window: window.handle.clone(),
        handle: handle.clone(),
        op,
        value: value.map(str::to_owned),
        settle: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hello_names_windows_and_says_what_is_missing() {
    let d = WindowsDriver::new().unwrap();
    let h = d.hello().await.unwrap();
    assert_eq!(h.platform, "windows");
    assert!(h.capabilities.tree && h.capabilities.actions && h.capabilities.keyboard);
    assert!(!h.capabilities.events && !h.capabilities.capture);
    // Wine 8.0 registers no CUIAutomation class: REGDB_E_CLASSNOTREG.
    assert!(
        h.permissions
            .notes
            .iter()
            .any(|n| n.contains("UI Automation client is unavailable") && n.contains("0x80040154")),
        "{:?}",
        h.permissions.notes
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_test_app_is_read_and_operated() {
    let app = start(&testapp_path(), &[]);
    assert_eq!(app.line(), "ready");
    let d = WindowsDriver::new().unwrap();
    let w = window_of(&d, app.child.id(), "deskpilot test app").await;
    assert_eq!(w.role, Role::Window);
    let snap = d
        .snapshot(SnapshotParams::whole(w.handle.clone()))
        .await
        .unwrap();
    let root = &snap.root;
    assert_eq!(root.name, "deskpilot test app");
    let button = by_name(root, Role::Button, "Press me").clone();
    let check = by_name(root, Role::Checkbox, "Remember me").clone();
    let edit = by_name(root, Role::Textbox, "Name:").clone();
    assert!(edit.states.contains(State::Editable));
    let list = first(root, Role::List).clone();
    assert_eq!(list.child_count, 3);
    let names: Vec<&str> = list.children.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["Apple", "Banana", "Cherry"]);
    let combo = first(root, Role::Combobox).clone();
    assert_eq!(combo.children.len(), 3);
    assert!(
        combo
            .children
            .iter()
            .all(|c| c.states.contains(State::Offscreen)),
        "a closed combo's items are off screen"
    );
    // Wine 8.0 cannot read another process's menu: the bar says so.
    let bar = first(root, Role::Menubar);
    assert_eq!(
        bar.description.as_deref(),
        Some(deskpilot_driver_windows::facts::UNREADABLE_MENU)
    );
    assert!(snap.stats.objects >= 13, "{:?}", snap.stats);

    // Click: Wine's MSAA offers no default action for a button, so BM_CLICK.
    let r = d
        .act(act(&w, &button.handle, Op::Click, None))
        .await
        .unwrap();
    assert_eq!(
        (r.status, r.channel, r.method.as_str()),
        (ActStatus::Executed, Channel::Action, "win32:BM_CLICK"),
        "{r:?}"
    );
    assert_eq!(app.line(), "button: Press me");

    let r = d
        .act(act(&w, &check.handle, Op::Toggle, None))
        .await
        .unwrap();
    assert_eq!(r.method, "win32:BM_CLICK", "{r:?}");
    assert_eq!(app.line(), "checkbox: checked");
    let again = d
        .snapshot(SnapshotParams::whole(w.handle.clone()))
        .await
        .unwrap();
    assert!(
        by_name(&again.root, Role::Checkbox, "Remember me")
            .states
            .contains(State::Checked)
    );

    let r = d
        .act(act(&w, &list.children[1].handle, Op::Select, None))
        .await
        .unwrap();
    assert_eq!(r.method, "win32:LB_SETCURSEL+LBN_SELCHANGE", "{r:?}");
    assert_eq!(app.line(), "list: Banana");

    let r = d
        .act(act(&w, &combo.children[1].handle, Op::Select, None))
        .await
        .unwrap();
    assert_eq!(r.method, "win32:CB_SETCURSEL+CBN_SELCHANGE", "{r:?}");
    assert_eq!(app.line(), "combo: Green");
    let again = d
        .snapshot(SnapshotParams::whole(w.handle.clone()))
        .await
        .unwrap();
    assert_eq!(
        first(&again.root, Role::Combobox).value.as_deref(),
        Some("Green")
    );

    let r = d
        .act(act(&w, &edit.handle, Op::SetValue, Some("hello wine")))
        .await
        .unwrap();
    assert_eq!(
        (r.status, r.channel),
        (ActStatus::Executed, SET_TEXT_CHANNEL),
        "{r:?}"
    );
    assert_eq!(r.method, SET_TEXT_METHOD, "{r:?}");
    assert_eq!(app.line(), "edit: hello wine");

    // The menu through the declared keyboard fallback: Alt+F, then N for New.
    let k = d
        .keys(KeysParams {
            window: w.handle.clone(),
            chord: Some("alt+f n".into()),
            text: None,
        })
        .await
        .unwrap();
    assert_eq!(k.channel, Channel::Keyboard);
    assert_eq!(app.line(), "menu: New");

    let r = d.act(act(&w, &edit.handle, Op::Focus, None)).await.unwrap();
    assert_eq!(r.method, "win32:SetFocus", "{r:?}");
}

/// What Wine 8.0 answers `set_value` on an edit with.
const SET_TEXT_METHOD: &str = "msaa:put_accValue";
const SET_TEXT_CHANNEL: Channel = Channel::Value;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disabled_or_foreign_handle_is_refused() {
    let d = WindowsDriver::new().unwrap();
    let e = d
        .act(ActParams {
            window: deskpilot_core::Handle::new("hwnd:0x7fff0"),
            handle: deskpilot_core::Handle::new("w32:0x7fff0/0x7fff2"),
            op: Op::Click,
            value: None,
            settle: None,
        })
        .await
        .unwrap_err();
    assert_eq!(
        e.code,
        deskpilot_protocol::ErrorCode::ElementNotFound,
        "{e}"
    );
    let e = d
        .snapshot(SnapshotParams::whole(deskpilot_core::Handle::new(
            ":1.2|/org/a11y",
        )))
        .await
        .unwrap_err();
    assert_eq!(e.code, deskpilot_protocol::ErrorCode::InvalidArgument);
}
