// Window-wide shortcuts must not fire while the person types or a dialog has the focus.

export function isTyping(target: EventTarget | null): boolean {
  return (
    target instanceof HTMLElement &&
    (target.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT', 'BUTTON', 'A'].includes(target.tagName))
  );
}

/** The app's own dialogs. Only these count: an open `<dialog>` from anywhere else (a reply) must not turn off Esc. */
const appDialogs = new Set<HTMLDialogElement>();

/** `use:appDialog` on each of the app's own `<dialog>`s. */
export function appDialog(node: HTMLDialogElement) {
  appDialogs.add(node);
  return { destroy: () => void appDialogs.delete(node) };
}

export function modalOpen(): boolean {
  return [...appDialogs].some((dialog) => dialog.open);
}
