import { render } from '@testing-library/svelte';
import { describe, expect, it } from 'vitest';
import { fakeShell } from '../test/shell';
import { modalOpen } from './keys';
import SettingsDialog from './settings/SettingsDialog.svelte';

describe('modalOpen', () => {
  it("counts the app's own dialogs only, not an open <dialog> from anywhere else", () => {
    const foreign = document.createElement('dialog');
    foreign.setAttribute('open', '');
    document.body.append(foreign);
    expect(modalOpen()).toBe(false);
    foreign.remove();

    fakeShell();
    render(SettingsDialog, { onclose: () => undefined, onsaved: () => undefined });
    const own = document.querySelector('dialog')!;
    own.setAttribute('open', '');
    expect(modalOpen()).toBe(true);
  });
});
