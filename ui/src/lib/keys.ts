// Window-wide shortcuts must not fire while the person types or a dialog has the focus.

export function isTyping(target: EventTarget | null): boolean {
  return (
    target instanceof HTMLElement &&
    (target.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT', 'BUTTON', 'A'].includes(target.tagName))
  );
}

export function modalOpen(): boolean {
  return document.querySelector('dialog[open]') !== null;
}
