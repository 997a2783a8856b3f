//! How the window's WebKitGTK starts on Linux, chosen for idle memory: the page is a chat of
//! text and still images, so the GPU machinery that WebKit and GTK load by default costs
//! memory for nothing (`scripts/measure.sh --release --only memory`, PSS across the app's
//! processes on a quiet machine: 298 MB with everything on, 228 MB with compositing and
//! DMA-BUF off, 200 MB with the GL driver also kept out of the window's own process and the
//! JavaScript JIT off).
//!
//! Every variable is only a default: one the user has set is left alone. The ones set here
//! are the window's own: the programs the agent starts do not inherit them (a browser it opens
//! keeps its JIT and GPU).

/// WebKitGTK and GTK read these once, when they start.
const DEFAULTS: [(&str, &str); 4] = [
    // GPU compositing and its DMA-BUF renderer: ~80 MB across WebKit's processes.
    ("WEBKIT_DISABLE_COMPOSITING_MODE", "1"),
    ("WEBKIT_DISABLE_DMABUF_RENDERER", "1"),
    // GTK's own OpenGL, which no widget of the window uses: opening an X display otherwise
    // probes GLX and loads the GL driver (with Mesa, all of libLLVM) into the app.
    ("GDK_GL", "disable"),
    // JavaScriptCore's JIT compilers: ~7 MB of the web process for a page that runs little
    // script, and no executable memory written at run time, which also takes a common target
    // of exploits off the table. The price is slower script: the long-session rendering
    // draws smaller chunks per frame to stay smooth (ui/src/lib/common/newestFirst.svelte.ts).
    ("JSC_useJIT", "0"),
];

/// glvnd's list of EGL drivers, read once per process when EGL is first used.
const EGL_VENDOR_FILES: &str = "__EGL_VENDOR_LIBRARY_FILENAMES";

/// Sets the defaults and, when compositing is off on X11, keeps the GL driver out of this
/// process (`WEBKIT_DISABLE_COMPOSITING_MODE=0`, or `__EGL_VENDOR_LIBRARY_FILENAMES` set,
/// leaves it in).
///
/// # Safety
/// Changes the environment: call it first thing in `main`, before any other thread exists.
pub unsafe fn prepare() {
    let mut set = Vec::new();
    for (name, value) in DEFAULTS {
        if std::env::var_os(name).is_none() {
            // SAFETY: the caller guarantees that no other thread exists yet.
            unsafe { std::env::set_var(name, value) };
            set.push(name.into());
        }
    }
    deskhand_engine::program_env::withhold_from_programs(set);
    let compositing_off = std::env::var_os("WEBKIT_DISABLE_COMPOSITING_MODE")
        .is_some_and(|value| !value.is_empty() && value != "0");
    let x11 = std::env::var_os("WAYLAND_DISPLAY").is_none()
        || std::env::var("GDK_BACKEND").is_ok_and(|backend| backend == "x11");
    if compositing_off && x11 && std::env::var_os(EGL_VENDOR_FILES).is_none() {
        // SAFETY: as above.
        unsafe { load_no_egl_drivers() };
    }
}

/// Without compositing, WebKit's UI process (this one) has no use for EGL, yet it still opens
/// an EGL display when it starts the web process, and that loads the GL driver: with Mesa, all
/// of libLLVM, whose relocated tables and static constructors alone leave 8 MB of private
/// memory. The web process does need EGL to draw. So glvnd is made to read an empty driver
/// list here, before WebKit asks, and the variable is removed again so that the web process,
/// started later with this environment, finds the real drivers. Where libEGL is not glvnd
/// the variable means nothing and all stays as it was.
///
/// # Safety
/// Changes the environment: only while no other thread exists.
unsafe fn load_no_egl_drivers() {
    const EGL_EXTENSIONS: i32 = 0x3055;
    type QueryString = unsafe extern "C" fn(*mut libc::c_void, i32) -> *const libc::c_char;
    // SAFETY: the caller guarantees that no other thread exists.
    unsafe { std::env::set_var(EGL_VENDOR_FILES, "/dev/null") };
    // SAFETY: a plain dlopen/dlsym of a C library's exported function; the handle is kept
    // (never closed) because the library stays loaded for WebKit anyway.
    unsafe {
        let library = libc::dlopen(c"libEGL.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL);
        if !library.is_null() {
            let symbol = libc::dlsym(library, c"eglQueryString".as_ptr());
            if !symbol.is_null() {
                let query: QueryString = std::mem::transmute(symbol);
                // The client extensions of EGL_NO_DISPLAY: glvnd loads its driver list to
                // answer; the answer itself does not matter.
                query(std::ptr::null_mut(), EGL_EXTENSIONS);
            }
        }
        std::env::remove_var(EGL_VENDOR_FILES);
    }
}
