//! What the shell asks of the desktop outside the page: a confirmation in a native dialog, and
//! opening a link in the system browser.
//!
//! Why native: a reply the model wrote is drawn in the page, and whatever the page shows or
//! answers, a hostile reply might imitate. A dialog of the shell's own (GTK, drawn by this
//! process, not by the webview) is one no page content can draw over or click, so the
//! decisions that widen what the agent may do, or where the API key goes, are asked there.
//! No webview permission is involved: the page only calls the app's commands.

use async_trait::async_trait;
use tauri::Url;

/// A question for the person, with the words of its "yes" button. Anything but a click on
/// that button (Cancel, Esc, closing the dialog) is a no.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Confirmation {
    pub title: String,
    pub message: String,
    pub accept: String,
}

#[async_trait]
pub trait Desktop: Send + Sync {
    /// Asks in a dialog of the shell's own; true only for an explicit yes.
    async fn confirm(&self, question: Confirmation) -> bool;

    /// Opens `url` in the system's browser.
    fn open_url(&self, url: &Url) -> Result<(), String>;

    /// A desktop notification (the window is hidden: a task waits or has finished). Best
    /// effort: a desktop without a notification service shows nothing. `body` is written as
    /// an action summary (`emphasis`): its names are bold where the service takes markup,
    /// plain where it does not, and never markup of their own.
    fn notify(&self, title: &str, body: &str);
}

/// The real desktop: GTK dialogs over the app's window, `xdg-open` for links.
pub struct NativeDesktop;

#[async_trait]
impl Desktop for NativeDesktop {
    async fn confirm(&self, question: Confirmation) -> bool {
        let (answer, answered) = tokio::sync::oneshot::channel();
        // GTK runs on the main thread, whose loop is the default main context.
        #[cfg(target_os = "linux")]
        gtk::glib::MainContext::default().invoke(move || native::ask(question, answer));
        // No native dialog of ours elsewhere: the answer is no.
        #[cfg(not(target_os = "linux"))]
        drop((question, answer));
        answered.await.unwrap_or(false)
    }

    fn open_url(&self, url: &Url) -> Result<(), String> {
        let mut command = std::process::Command::new("xdg-open");
        command
            .arg(url.as_str())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        // The browser gets the environment the person started Deskhand with: no API keys,
        // none of the window's own WebKit settings.
        for name in deskhand_engine::program_env::withheld() {
            command.env_remove(name);
        }
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot start xdg-open: {e}"))?;
        // xdg-open hands over to the browser and exits; reap it.
        std::thread::spawn(move || child.wait());
        Ok(())
    }

    fn notify(&self, title: &str, body: &str) {
        let (title, body) = (title.to_string(), body.to_string());
        // A D-Bus round trip: off the caller's thread, and bounded by its timeout.
        std::thread::spawn(move || {
            #[cfg(target_os = "linux")]
            if let Err(e) = native::notify(&title, &body) {
                eprintln!("deskhand-app: cannot show a notification: {e}");
            }
            #[cfg(not(target_os = "linux"))]
            drop((title, body));
        });
    }
}

#[cfg(target_os = "linux")]
mod native {
    use gtk::prelude::*;
    use gtk::{ButtonsType, DialogFlags, MessageDialog, MessageType, ResponseType};
    use std::cell::RefCell;
    use tokio::sync::oneshot;

    use super::Confirmation;

    /// Asks the desktop's notification service (org.freedesktop.Notifications) to show one.
    pub fn notify(title: &str, body: &str) -> Result<(), gtk::glib::Error> {
        use gtk::gio::{self, DBusCallFlags};
        use gtk::glib::{ToVariant, Variant, VariantDict};
        let bus = gio::bus_get_sync(gio::BusType::Session, gio::Cancellable::NONE)?;
        let capabilities = bus.call_sync(
            Some("org.freedesktop.Notifications"),
            "/org/freedesktop/Notifications",
            "org.freedesktop.Notifications",
            "GetCapabilities",
            None,
            None,
            DBusCallFlags::NONE,
            2000,
            gio::Cancellable::NONE,
        )?;
        let markup = capabilities
            .child_value(0)
            .get::<Vec<String>>()
            .is_some_and(|caps| caps.iter().any(|c| c == "body-markup"));
        let body = body_text(body, markup);
        let actions: Vec<String> = Vec::new();
        let hints = VariantDict::new(None).end();
        let parameters = Variant::tuple_from_iter([
            "Deskhand".to_variant(),
            0u32.to_variant(),
            "deskhand".to_variant(),
            title.to_variant(),
            body.to_variant(),
            actions.to_variant(),
            hints,
            (-1i32).to_variant(),
        ]);
        bus.call_sync(
            Some("org.freedesktop.Notifications"),
            "/org/freedesktop/Notifications",
            "org.freedesktop.Notifications",
            "Notify",
            Some(&parameters),
            None,
            DBusCallFlags::NONE,
            2000,
            gio::Cancellable::NONE,
        )?;
        Ok(())
    }

    /// The body as the specification allows it: with `body-markup`, text escaped and names
    /// in `<b>` (a name like `<img src=…>` must not become the service's markup); without
    /// it, plain text, since markup would show through.
    fn body_text(summary: &str, markup: bool) -> String {
        use deskhand_engine::emphasis;
        if !markup {
            return emphasis::plain(summary);
        }
        emphasis::render(
            summary,
            |text| gtk::glib::markup_escape_text(text).to_string(),
            |text| format!("<b>{text}</b>"),
        )
    }

    /// Shows the dialog over the app's window (the visible toplevel), with Cancel as the
    /// default, so that Enter held down from the page does not answer it.
    pub fn ask(question: Confirmation, answer: oneshot::Sender<bool>) {
        let parent = gtk::Window::list_toplevels()
            .into_iter()
            .filter_map(|w| w.downcast::<gtk::ApplicationWindow>().ok())
            .find(|w| w.is_visible());
        let dialog = MessageDialog::new(
            parent.as_ref(),
            DialogFlags::MODAL | DialogFlags::DESTROY_WITH_PARENT,
            MessageType::Warning,
            ButtonsType::None,
            &question.message,
        );
        dialog.set_title(&question.title);
        dialog.add_button("Cancel", ResponseType::Cancel);
        dialog.add_button(&question.accept, ResponseType::Accept);
        dialog.set_default_response(ResponseType::Cancel);
        dialog.set_keep_above(true);
        let answer = RefCell::new(Some(answer));
        // The first response answers and closes; closing emits one more (`DeleteEvent`),
        // which finds the answer gone.
        dialog.connect_response(move |dialog, response| {
            if let Some(answer) = answer.borrow_mut().take() {
                let _ = answer.send(response == ResponseType::Accept);
                dialog.close();
            }
        });
        dialog.show_all();
    }

    #[cfg(test)]
    mod tests {
        use super::body_text;

        #[test]
        fn a_body_is_escaped_markup_or_plain_text_never_markdown() {
            let name = "<img src=x onerror=alert(1)> **&";
            let summary = format!(
                "Click **{}** in a&b",
                deskhand_engine::emphasis::escape(name)
            );
            assert_eq!(
                body_text(&summary, true),
                "Click <b>&lt;img src=x onerror=alert(1)&gt; **&amp;</b> in a&amp;b"
            );
            assert_eq!(body_text(&summary, false), format!("Click {name} in a&b"));
        }
    }
}
