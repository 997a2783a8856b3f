//! The window shows the app and nothing else. A reply cannot load another page in it (a form
//! that survived sanitizing, a link, script): the webview refuses every navigation away from
//! the app's own origin, and every new window. Links go to the system browser through
//! `open_link`, after a native confirmation. The CSP (tauri.conf.json) says the same from the
//! page's side: `form-action 'none'`, `base-uri 'none'`, `object-src 'none'`,
//! `frame-src 'none'`.

use tauri::webview::NewWindowResponse;
use tauri::{App, Runtime, Url, WebviewWindow, WebviewWindowBuilder};

use crate::bar::MAIN_WINDOW;

/// Where the app's page comes from: the embedded frontend (`tauri://localhost`), or in a
/// development build the Vite server of `build.devUrl` (`http://127.0.0.1:1420`).
pub fn app_origin(config: &tauri::Config) -> tauri::Result<Url> {
    match &config.build.dev_url {
        Some(dev) if tauri::is_dev() => Ok(dev.clone()),
        _ => Url::parse("tauri://localhost").map_err(tauri::Error::InvalidUrl),
    }
}

/// Same scheme, host and port as the app's page.
pub fn is_app_url(url: &Url, app: &Url) -> bool {
    url.scheme() == app.scheme()
        && url.host_str() == app.host_str()
        && url.port_or_known_default() == app.port_or_known_default()
}

/// Creates the main window of tauri.conf.json (which does not create it itself) with the
/// navigation guard and no new windows.
pub fn main_window<R: Runtime>(app: &App<R>) -> tauri::Result<WebviewWindow<R>> {
    let config = app
        .config()
        .app
        .windows
        .iter()
        .find(|w| w.label == MAIN_WINDOW)
        .ok_or(tauri::Error::WindowNotFound)?
        .clone();
    let origin = app_origin(app.config())?;
    WebviewWindowBuilder::from_config(app, &config)?
        .on_navigation(move |url| {
            let allowed = is_app_url(url, &origin);
            if !allowed {
                eprintln!("deskhand-app: refused to load {url} in the window");
            }
            allowed
        })
        .on_new_window(|url, _| {
            eprintln!("deskhand-app: refused to open a window for {url}");
            NewWindowResponse::Deny
        })
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_apps_own_origin_is_the_app() {
        let app = Url::parse("tauri://localhost").unwrap();
        for allowed in [
            "tauri://localhost",
            "tauri://localhost/",
            "tauri://localhost/index.html?x#y",
        ] {
            assert!(is_app_url(&Url::parse(allowed).unwrap(), &app), "{allowed}");
        }
        for refused in [
            "https://evil.example/",
            "http://localhost/",
            "tauri://evil.example/",
            "http://tauri.localhost/",
            "file:///etc/passwd",
            "data:text/html,<form>",
            "about:blank",
        ] {
            assert!(
                !is_app_url(&Url::parse(refused).unwrap(), &app),
                "{refused}"
            );
        }
        let dev = Url::parse("http://127.0.0.1:1420").unwrap();
        assert!(is_app_url(
            &Url::parse("http://127.0.0.1:1420/src/main.ts").unwrap(),
            &dev
        ));
        for refused in [
            "http://127.0.0.1:1421/",
            "http://localhost:1420/",
            "https://127.0.0.1:1420/",
        ] {
            assert!(
                !is_app_url(&Url::parse(refused).unwrap(), &dev),
                "{refused}"
            );
        }
    }
}
