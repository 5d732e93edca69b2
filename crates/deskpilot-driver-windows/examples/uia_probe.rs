//! Probes what the UI Automation and MSAA of this Windows (or Wine) answer, and prints
//! one line per feature: `feature: ok …`, `feature: missing (HRESULT)`.
//!
//! Usage: `uia_probe [PROGRAM ...]`: starts each program (default `notepad.exe`),
//! waits for its first visible top-level window and probes it. Off Windows it only
//! says so. The findings are written up in docs/ARCHITECTURE.md §6b.

#[cfg(not(windows))]
fn main() {
    eprintln!("uia_probe runs on Windows (or under Wine) only");
}

#[cfg(windows)]
fn main() {
    probe::main();
}

#[cfg(windows)]
mod probe {
    use std::time::{Duration, Instant};

    use windows::Win32::Foundation::{HWND, LPARAM};
    use windows::Win32::System::Com::{
        CLSCTX_INPROC_SERVER, COINIT_MULTITHREADED, CoCreateInstance, CoInitializeEx,
    };
    use windows::Win32::System::Variant::{VARIANT, VT_BOOL, VT_BSTR, VT_I4};
    use windows::Win32::UI::Accessibility::*;
    use windows::Win32::UI::WindowsAndMessaging::{
        EnumWindows, GetWindowTextW, GetWindowThreadProcessId, IsWindowVisible, OBJID_CLIENT,
        OBJID_MENU, OBJID_SYSMENU, OBJID_TITLEBAR, OBJID_WINDOW,
    };
    use windows::core::{BOOL, Interface};

    fn out(feature: &str, r: Result<String, windows::core::Error>) {
        match r {
            Ok(s) => println!("{feature}: ok {s}"),
            Err(e) => println!("{feature}: missing ({:#010x} {})", e.code().0, e.message()),
        }
    }

    pub fn main() {
        let programs: Vec<String> = {
            let a: Vec<String> = std::env::args().skip(1).collect();
            if a.is_empty() {
                vec!["notepad.exe".into()]
            } else {
                a
            }
        };
        unsafe {
            let _ = CoInitializeEx(None, COINIT_MULTITHREADED).ok();
        }
        let uia: Result<IUIAutomation, _> =
            unsafe { CoCreateInstance(&CUIAutomation, None, CLSCTX_INPROC_SERVER) };
        out(
            "CoCreateInstance(CUIAutomation)",
            uia.as_ref().map(|_| String::new()).map_err(|e| e.clone()),
        );
        let uia8: Result<IUIAutomation, _> =
            unsafe { CoCreateInstance(&CUIAutomation8, None, CLSCTX_INPROC_SERVER) };
        out(
            "CoCreateInstance(CUIAutomation8)",
            uia8.map(|_| String::new()),
        );
        // Wine 8.0 registers no CUIAutomation class, and its uiautomationcore.dll
        // DllGetClassObject is an unimplemented stub that aborts the process when
        // called: never call it directly.
        let uia = uia.ok();
        if let Some(uia) = &uia {
            probe_root(uia);
        }
        for prog in programs {
            let child = match std::process::Command::new(&prog).spawn() {
                Ok(c) => c,
                Err(e) => {
                    println!("spawn {prog}: {e}");
                    continue;
                }
            };
            let Some(hwnd) = wait_window(child.id(), Duration::from_secs(15)) else {
                println!("{prog}: no window within 15 s");
                continue;
            };
            println!("== {prog} pid={} hwnd={:?}", child.id(), hwnd.0);
            if let Some(uia) = &uia {
                probe_window(uia, hwnd);
            }
            probe_flat(hwnd);
            probe_msaa(hwnd);
        }
    }

    fn probe_root(uia: &IUIAutomation) {
        out("GetRootElement", unsafe {
            uia.GetRootElement().and_then(|r| {
                let n = r.CurrentName()?;
                let kids = r.FindAll(TreeScope_Children, &uia.CreateTrueCondition()?)?;
                Ok(format!("name={n:?} children={}", kids.Length()?))
            })
        });
        out("GetFocusedElement", unsafe {
            uia.GetFocusedElement()
                .and_then(|e| Ok(format!("{:?}", e.CurrentName()?)))
        });
    }

    fn wait_window(pid: u32, limit: Duration) -> Option<HWND> {
        let until = Instant::now() + limit;
        while Instant::now() < until {
            let mut found: (u32, Option<HWND>) = (pid, None);
            unsafe extern "system" fn cb(h: HWND, l: LPARAM) -> BOOL {
                let st = unsafe { &mut *(l.0 as *mut (u32, Option<HWND>)) };
                let mut p = 0;
                unsafe { GetWindowThreadProcessId(h, Some(&mut p)) };
                if p == st.0 && unsafe { IsWindowVisible(h) }.as_bool() {
                    st.1 = Some(h);
                    return BOOL(0);
                }
                BOOL(1)
            }
            unsafe {
                let _ = EnumWindows(Some(cb), LPARAM(&mut found as *mut _ as isize));
            }
            if let Some(h) = found.1 {
                std::thread::sleep(Duration::from_millis(500));
                return Some(h);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        None
    }

    fn describe(e: &IUIAutomationElement) -> String {
        unsafe {
            let name = e
                .CurrentName()
                .map(|b| b.to_string())
                .unwrap_or_else(|x| format!("ERR{:x}", x.code().0));
            let ct = e.CurrentControlType().map(|c| c.0).unwrap_or(-1);
            let r = e.CurrentBoundingRectangle().unwrap_or_default();
            let en = e
                .CurrentIsEnabled()
                .map(|b| b.as_bool().to_string())
                .unwrap_or_else(|x| format!("ERR{:x}", x.code().0));
            let foc = e
                .CurrentHasKeyboardFocus()
                .map(|b| b.as_bool().to_string())
                .unwrap_or_else(|x| format!("ERR{:x}", x.code().0));
            let aid = e
                .CurrentAutomationId()
                .map(|b| b.to_string())
                .unwrap_or_else(|x| format!("ERR{:x}", x.code().0));
            let off = e
                .CurrentIsOffscreen()
                .map(|b| b.as_bool().to_string())
                .unwrap_or_else(|x| format!("ERR{:x}", x.code().0));
            let cls = e
                .CurrentClassName()
                .map(|b| b.to_string())
                .unwrap_or_default();
            let hw = e
                .CurrentNativeWindowHandle()
                .map(|h| h.0 as usize)
                .unwrap_or(0);
            let val = e
                .GetCurrentPropertyValue(UIA_ValueValuePropertyId)
                .map(|v| variant_str(&v))
                .unwrap_or_else(|x| format!("ERR{:x}", x.code().0));
            let mut pats = Vec::new();
            for (id, n) in PATTERNS {
                if let Ok(p) = e.GetCurrentPattern(*id)
                    && !p.as_raw().is_null()
                {
                    pats.push(*n);
                }
            }
            format!(
                "ct={ct} name={name:?} class={cls:?} hwnd={hw:#x} aid={aid:?} rect=({},{},{},{}) enabled={en} focus={foc} offscreen={off} value={val} patterns={pats:?}",
                r.left,
                r.top,
                r.right - r.left,
                r.bottom - r.top
            )
        }
    }

    const PATTERNS: &[(UIA_PATTERN_ID, &str)] = &[
        (UIA_InvokePatternId, "Invoke"),
        (UIA_ValuePatternId, "Value"),
        (UIA_TogglePatternId, "Toggle"),
        (UIA_SelectionItemPatternId, "SelectionItem"),
        (UIA_SelectionPatternId, "Selection"),
        (UIA_ExpandCollapsePatternId, "ExpandCollapse"),
        (UIA_ScrollPatternId, "Scroll"),
        (UIA_ScrollItemPatternId, "ScrollItem"),
        (UIA_TextPatternId, "Text"),
        (UIA_RangeValuePatternId, "RangeValue"),
        (UIA_LegacyIAccessiblePatternId, "LegacyIAccessible"),
        (UIA_WindowPatternId, "Window"),
    ];

    pub fn variant_str(v: &VARIANT) -> String {
        unsafe {
            let inner = &v.Anonymous.Anonymous;
            match inner.vt {
                VT_BSTR => format!("{:?}", inner.Anonymous.bstrVal.to_string()),
                VT_I4 => format!("{}", inner.Anonymous.lVal),
                VT_BOOL => format!("{}", inner.Anonymous.boolVal.0 != 0),
                vt => format!("vt{}", vt.0),
            }
        }
    }

    fn probe_window(uia: &IUIAutomation, hwnd: HWND) {
        let el = unsafe { uia.ElementFromHandle(hwnd) };
        out(
            "ElementFromHandle",
            el.as_ref().map(describe).map_err(|e| e.clone()),
        );
        let Ok(el) = el else { return };
        // Tree walkers.
        for (name, w) in [
            ("RawViewWalker", unsafe { uia.RawViewWalker() }),
            ("ControlViewWalker", unsafe { uia.ControlViewWalker() }),
            ("ContentViewWalker", unsafe { uia.ContentViewWalker() }),
        ] {
            out(
                name,
                w.as_ref().map(|_| String::new()).map_err(|e| e.clone()),
            );
            if let Ok(w) = w {
                let started = Instant::now();
                let mut n = 0;
                walk(&w, &el, 0, &mut n, name == "ControlViewWalker");
                println!(
                    "  {name} walk: {n} elements in {} ms",
                    started.elapsed().as_millis()
                );
            }
        }
        out("FindAll(Subtree, TrueCondition)", unsafe {
            let t = Instant::now();
            uia.CreateTrueCondition()
                .and_then(|c| el.FindAll(TreeScope_Subtree, &c))
                .and_then(|a| {
                    Ok(format!(
                        "{} elements in {} ms",
                        a.Length()?,
                        t.elapsed().as_millis()
                    ))
                })
        });
        out("FindAll(Children)", unsafe {
            uia.CreateTrueCondition()
                .and_then(|c| el.FindAll(TreeScope_Children, &c))
                .and_then(|a| Ok(format!("{} elements", a.Length()?)))
        });
        out("FindFirst(ControlType=Edit)", unsafe {
            let v = variant_i4(UIA_EditControlTypeId.0);
            uia.CreatePropertyCondition(UIA_ControlTypePropertyId, &v)
                .and_then(|c| el.FindFirst(TreeScope_Subtree, &c))
                .map(|e| describe(&e))
        });
        // Cache requests.
        let cr = unsafe { uia.CreateCacheRequest() };
        out(
            "CreateCacheRequest",
            cr.as_ref().map(|_| String::new()).map_err(|e| e.clone()),
        );
        if let Ok(cr) = cr {
            unsafe {
                for p in [
                    UIA_NamePropertyId,
                    UIA_ControlTypePropertyId,
                    UIA_BoundingRectanglePropertyId,
                    UIA_IsEnabledPropertyId,
                ] {
                    let _ = cr.AddProperty(p);
                }
                out(
                    "CacheRequest.AddPattern(Invoke)",
                    cr.AddPattern(UIA_InvokePatternId).map(|_| String::new()),
                );
                out(
                    "CacheRequest.SetTreeScope(Subtree)",
                    cr.SetTreeScope(TreeScope_Subtree).map(|_| String::new()),
                );
                out(
                    "BuildUpdatedCache(Subtree)",
                    el.BuildUpdatedCache(&cr).and_then(|c| {
                        let kids = c.GetCachedChildren()?;
                        Ok(format!(
                            "name={:?} cached children={}",
                            c.CachedName()?.to_string(),
                            kids.Length()?
                        ))
                    }),
                );
                let _ = cr.SetTreeScope(TreeScope_Element);
                out(
                    "FindAllBuildCache(Subtree)",
                    uia.CreateTrueCondition().and_then(|c| {
                        let a = el.FindAllBuildCache(TreeScope_Subtree, &c, &cr)?;
                        let n = a.Length()?;
                        let first = if n > 0 {
                            let e = a.GetElement(0)?;
                            format!(
                                "first name={:?} ct={}",
                                e.CachedName()?.to_string(),
                                e.CachedControlType()?.0
                            )
                        } else {
                            String::new()
                        };
                        Ok(format!("{n} elements {first}"))
                    }),
                );
                out(
                    "ElementFromHandleBuildCache",
                    uia.ElementFromHandleBuildCache(hwnd, &cr)
                        .and_then(|c| Ok(format!("{:?}", c.CachedName()?.to_string()))),
                );
            }
        }
        out("GetRuntimeId", unsafe {
            el.GetRuntimeId()
                .map(|sa| format!("safearray {:?}", !sa.is_null()))
        });
        out("CompareElements(self,self)", unsafe {
            uia.CompareElements(&el, &el)
                .map(|b| b.as_bool().to_string())
        });
        // Events.
        probe_events(uia, &el);
    }

    fn variant_i4(v: i32) -> VARIANT {
        let mut var = VARIANT::default();
        unsafe {
            (*var.Anonymous.Anonymous).vt = VT_I4;
            (*var.Anonymous.Anonymous).Anonymous.lVal = v;
        }
        var
    }

    fn walk(
        w: &IUIAutomationTreeWalker,
        e: &IUIAutomationElement,
        depth: usize,
        n: &mut usize,
        print: bool,
    ) {
        if *n > 400 || depth > 12 {
            return;
        }
        *n += 1;
        if print {
            println!("  {}{}", "  ".repeat(depth), describe(e));
        }
        let mut c = unsafe { w.GetFirstChildElement(e) }.ok();
        while let Some(ch) = c {
            walk(w, &ch, depth + 1, n, print);
            c = unsafe { w.GetNextSiblingElement(&ch) }.ok();
        }
    }

    #[windows::core::implement(IUIAutomationFocusChangedEventHandler, IUIAutomationEventHandler)]
    struct Handler;

    impl IUIAutomationFocusChangedEventHandler_Impl for Handler_Impl {
        fn HandleFocusChangedEvent(
            &self,
            _sender: windows::core::Ref<'_, IUIAutomationElement>,
        ) -> windows::core::Result<()> {
            println!("  event: focus changed");
            Ok(())
        }
    }
    impl IUIAutomationEventHandler_Impl for Handler_Impl {
        fn HandleAutomationEvent(
            &self,
            _sender: windows::core::Ref<'_, IUIAutomationElement>,
            id: UIA_EVENT_ID,
        ) -> windows::core::Result<()> {
            println!("  event: automation {}", id.0);
            Ok(())
        }
    }

    fn probe_events(uia: &IUIAutomation, el: &IUIAutomationElement) {
        let h: IUIAutomationFocusChangedEventHandler = Handler.into();
        out("AddFocusChangedEventHandler", unsafe {
            uia.AddFocusChangedEventHandler(None, &h)
                .map(|_| String::new())
        });
        let h2: IUIAutomationEventHandler = Handler.into();
        out("AddAutomationEventHandler(Window_WindowOpened)", unsafe {
            uia.AddAutomationEventHandler(
                UIA_Window_WindowOpenedEventId,
                el,
                TreeScope_Subtree,
                None,
                &h2,
            )
            .map(|_| String::new())
        });
        out("RemoveAllEventHandlers", unsafe {
            uia.RemoveAllEventHandlers().map(|_| String::new())
        });
    }

    /// The flat UIA client API of uiautomationcore.dll (HUIANODE handles), which
    /// Wine implements underneath its missing COM client.
    fn probe_flat(hwnd: HWND) {
        let mut node = HUIANODE::default();
        let r = unsafe { UiaNodeFromHandle(hwnd, &mut node) };
        out("flat UiaNodeFromHandle", r.map(|_| String::new()));
        if node.is_invalid() {
            return;
        }
        flat_props("flat window", node);
        let mut root = HUIANODE::default();
        out(
            "flat UiaGetRootNode",
            unsafe { UiaGetRootNode(&mut root) }.map(|_| String::new()),
        );
        if !root.is_invalid() {
            flat_props("flat root", root);
        }
        // First child of the window, through UiaNavigate with a true condition and a
        // cache request of the name.
        let mut cond = UiaCondition {
            ConditionType: ConditionType_True,
        };
        let mut props = [UIA_NamePropertyId.0, UIA_ControlTypePropertyId.0];
        let mut req = UiaCacheRequest {
            pViewCondition: &mut cond,
            Scope: TreeScope_Element,
            pProperties: props.as_mut_ptr(),
            cProperties: props.len() as i32,
            pPatterns: std::ptr::null_mut(),
            cPatterns: 0,
            automationElementMode: AutomationElementMode_Full,
        };
        let mut data: *mut windows::Win32::System::Com::SAFEARRAY = std::ptr::null_mut();
        let mut tree = windows::core::BSTR::new();
        let r = unsafe {
            UiaNavigate(
                node,
                NavigateDirection_FirstChild,
                &mut cond,
                &mut req,
                &mut data,
                &mut tree,
            )
        };
        out(
            "flat UiaNavigate(FirstChild)",
            r.map(|_| format!("data={} tree={:?}", !data.is_null(), tree.to_string())),
        );
        let mut data2: *mut windows::Win32::System::Com::SAFEARRAY = std::ptr::null_mut();
        let mut tree2 = windows::core::BSTR::new();
        req.Scope = TreeScope_Subtree;
        let r = unsafe {
            UiaGetUpdatedCache(
                node,
                &mut req,
                NormalizeState_None,
                std::ptr::null_mut(),
                &mut data2,
                &mut tree2,
            )
        };
        out(
            "flat UiaGetUpdatedCache(Subtree)",
            r.map(|_| format!("data={} tree={:?}", !data2.is_null(), tree2.to_string())),
        );
        let mut pat = HUIAPATTERNOBJECT::default();
        out(
            "flat UiaGetPatternProvider(LegacyIAccessible)",
            unsafe { UiaGetPatternProvider(node, UIA_LegacyIAccessiblePatternId.0, &mut pat) }
                .map(|_| format!("{}", !pat.is_invalid())),
        );
        unsafe {
            let _ = UiaNodeRelease(node);
        }
    }

    fn flat_props(what: &str, node: HUIANODE) {
        let mut parts = Vec::new();
        for (id, n) in [
            (UIA_NamePropertyId, "Name"),
            (UIA_ControlTypePropertyId, "ControlType"),
            (UIA_BoundingRectanglePropertyId, "BoundingRectangle"),
            (UIA_IsEnabledPropertyId, "IsEnabled"),
            (UIA_HasKeyboardFocusPropertyId, "HasKeyboardFocus"),
            (UIA_AutomationIdPropertyId, "AutomationId"),
            (UIA_IsOffscreenPropertyId, "IsOffscreen"),
            (UIA_ValueValuePropertyId, "Value"),
            (UIA_ProcessIdPropertyId, "ProcessId"),
            (UIA_RuntimeIdPropertyId, "RuntimeId"),
            (
                UIA_IsInvokePatternAvailablePropertyId,
                "IsInvokePatternAvailable",
            ),
            (
                UIA_IsLegacyIAccessiblePatternAvailablePropertyId,
                "IsLegacyIAccessiblePatternAvailable",
            ),
        ] {
            let mut v = VARIANT::default();
            match unsafe { UiaGetPropertyValue(node, id.0, &mut v) } {
                Ok(()) => parts.push(format!("{n}={}", variant_str(&v))),
                Err(e) => parts.push(format!("{n}=ERR{:x}", e.code().0)),
            }
        }
        println!("{what}: {}", parts.join(" "));
    }

    fn probe_msaa(hwnd: HWND) {
        let mut p: *mut core::ffi::c_void = std::ptr::null_mut();
        let r = unsafe {
            AccessibleObjectFromWindow(hwnd, OBJID_CLIENT.0 as u32, &IAccessible::IID, &mut p)
        };
        out(
            "AccessibleObjectFromWindow(OBJID_CLIENT)",
            r.map(|_| String::new()),
        );
        if p.is_null() {
            return;
        }
        let acc = unsafe { IAccessible::from_raw(p) };
        let mut n = 0;
        msaa_walk(&acc, 0, &mut n);
        for (what, id) in [
            ("OBJID_WINDOW", OBJID_WINDOW),
            ("OBJID_MENU", OBJID_MENU),
            ("OBJID_TITLEBAR", OBJID_TITLEBAR),
            ("OBJID_SYSMENU", OBJID_SYSMENU),
        ] {
            let mut p: *mut core::ffi::c_void = std::ptr::null_mut();
            let r =
                unsafe { AccessibleObjectFromWindow(hwnd, id.0 as u32, &IAccessible::IID, &mut p) };
            out(
                &format!("AccessibleObjectFromWindow({what})"),
                r.map(|_| String::new()),
            );
            if !p.is_null() {
                let acc = unsafe { IAccessible::from_raw(p) };
                let mut n = 0;
                msaa_walk(&acc, 1, &mut n);
            }
        }
        // The menu bar read through USER32 from this (another) process.
        unsafe {
            use windows::Win32::UI::WindowsAndMessaging::{
                GetMenu, GetMenuItemCount, GetMenuStringW, GetSubMenu, MF_BYPOSITION,
            };
            let m = GetMenu(hwnd);
            let n = GetMenuItemCount(Some(m));
            let mut names = Vec::new();
            for i in 0..n.max(0) {
                let mut buf = [0u16; 128];
                let len = GetMenuStringW(m, i as u32, Some(&mut buf), MF_BYPOSITION);
                let sub = GetSubMenu(m, i);
                let subn = GetMenuItemCount(Some(sub));
                names.push(format!(
                    "{:?}({subn})",
                    String::from_utf16_lossy(&buf[..len.max(0) as usize])
                ));
            }
            println!(
                "GetMenu from another process: menu={:?} count={n} items={names:?}",
                m.0
            );
        }
        // Every child window's own client object.
        let mut kids: Vec<HWND> = Vec::new();
        unsafe extern "system" fn each(h: HWND, l: LPARAM) -> BOOL {
            unsafe { (*(l.0 as *mut Vec<HWND>)).push(h) };
            BOOL(1)
        }
        unsafe {
            let _ = windows::Win32::UI::WindowsAndMessaging::EnumChildWindows(
                Some(hwnd),
                Some(each),
                LPARAM(&mut kids as *mut _ as isize),
            );
        }
        for k in kids {
            let mut cls = [0u16; 128];
            let len =
                unsafe { windows::Win32::UI::WindowsAndMessaging::GetClassNameW(k, &mut cls) };
            println!(
                "  child hwnd {:?} class={:?}",
                k.0,
                String::from_utf16_lossy(&cls[..len as usize])
            );
            let mut p: *mut core::ffi::c_void = std::ptr::null_mut();
            let r = unsafe {
                AccessibleObjectFromWindow(k, OBJID_CLIENT.0 as u32, &IAccessible::IID, &mut p)
            };
            if r.is_err() || p.is_null() {
                println!("    OBJID_CLIENT: {r:?}");
                continue;
            }
            let acc = unsafe { IAccessible::from_raw(p) };
            let mut n = 0;
            msaa_walk(&acc, 2, &mut n);
        }
        let mut title = [0u16; 256];
        let len = unsafe { GetWindowTextW(hwnd, &mut title) };
        println!(
            "  msaa walk: {n} objects (window {:?})",
            String::from_utf16_lossy(&title[..len as usize])
        );
    }

    fn msaa_walk(acc: &IAccessible, depth: usize, n: &mut usize) {
        if *n > 300 || depth > 10 {
            return;
        }
        let me = variant_i4(0);
        *n += 1;
        let line = |acc: &IAccessible, child: &VARIANT| unsafe {
            let name = acc
                .get_accName(child)
                .map(|b| b.to_string())
                .unwrap_or_else(|e| format!("ERR{:x}", e.code().0));
            let role = acc
                .get_accRole(child)
                .map(|v| variant_str(&v))
                .unwrap_or_else(|e| format!("ERR{:x}", e.code().0));
            let state = acc
                .get_accState(child)
                .map(|v| variant_str(&v))
                .unwrap_or_else(|e| format!("ERR{:x}", e.code().0));
            let def = acc
                .get_accDefaultAction(child)
                .map(|b| b.to_string())
                .unwrap_or_else(|e| format!("ERR{:x}", e.code().0));
            let val = acc
                .get_accValue(child)
                .map(|b| b.to_string())
                .unwrap_or_else(|e| format!("ERR{:x}", e.code().0));
            let (mut l, mut t, mut w, mut h) = (0, 0, 0, 0);
            let loc = acc
                .accLocation(&mut l, &mut t, &mut w, &mut h, child)
                .map(|_| format!("({l},{t},{w},{h})"))
                .unwrap_or_else(|e| format!("ERR{:x}", e.code().0));
            format!(
                "name={name:?} role={role} state={state} default={def:?} value={val:?} loc={loc}"
            )
        };
        let count = unsafe { acc.accChildCount() }.unwrap_or(-1);
        println!(
            "  {}msaa {} children={count}",
            "  ".repeat(depth),
            line(acc, &me)
        );
        if count <= 0 {
            return;
        }
        let mut kids = vec![VARIANT::default(); count.min(200) as usize];
        let mut got = 0;
        if unsafe { AccessibleChildren(acc, 0, &mut kids, &mut got) }.is_err() {
            println!("  {}AccessibleChildren failed", "  ".repeat(depth));
            return;
        }
        for k in kids.iter().take(got as usize) {
            let vt = unsafe { k.Anonymous.Anonymous.vt };
            if vt == VT_I4 {
                *n += 1;
                println!("  {}  msaa-child {}", "  ".repeat(depth), line(acc, k));
            } else if let Ok(d) = unsafe { (*k.Anonymous.Anonymous).Anonymous.pdispVal.as_ref() }
                .ok_or(())
                .and_then(|d| d.cast::<IAccessible>().map_err(|_| ()))
            {
                msaa_walk(&d, depth + 1, n);
            }
        }
    }
}
