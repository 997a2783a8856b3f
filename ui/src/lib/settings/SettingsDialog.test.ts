import { render, screen, waitFor } from '@testing-library/svelte';
import userEvent from '@testing-library/user-event';
import { describe, expect, it, vi } from 'vitest';
import type { KeyInfo, WindowSettings } from '../ipc';
import { fakeShell } from '../../test/shell';
import SettingsDialog from './SettingsDialog.svelte';

const stored: WindowSettings = {
  provider: 'anthropic',
  model: '',
  base_url: null,
  approval_mode: 'ask',
  max_turns: 50,
  monitor: null,
  screenshot_size: null,
  max_cost_usd: 2,
  max_tokens: null,
  set_of_marks: false,
  effort: null,
};

const keyStatus = (provider: string, extra: Partial<KeyInfo> = {}): KeyInfo => ({
  provider,
  set: false,
  last4: null,
  source: null,
  keyring_available: true,
  keyring_error: null,
  required: provider !== 'ollama',
  ...extra,
});

function renderDialog(options: { keyring?: string; rejectSave?: string } = {}) {
  const calls = fakeShell((cmd, args) => {
    const a = args as Record<string, unknown>;
    switch (cmd) {
      case 'get_settings':
        return stored;
      case 'list_notes':
        return [];
      case 'get_memory_in_prompt':
        return true;
      case 'list_providers':
        return [
          { id: 'anthropic', name: 'Anthropic', needs_key: true, default_model: 'claude-sonnet-4-5', default_base_url: 'https://api.anthropic.com' },
          { id: 'ollama', name: 'Ollama (local)', needs_key: false, default_model: null, default_base_url: 'http://localhost:11434/v1' },
        ];
      case 'list_monitors':
        return [
          { index: 0, name: 'DP-1', width: 2560, height: 1440, primary: true, model_width: 1366, model_height: 768 },
          { index: 1, name: 'HDMI-1', width: 1920, height: 1200, primary: false, model_width: 1280, model_height: 800 },
        ];
      case 'key_status':
        return options.keyring
          ? keyStatus(String(a.provider ?? 'anthropic'), { keyring_available: false, keyring_error: options.keyring })
          : keyStatus(String(a.provider ?? 'anthropic'), a.provider ? {} : { set: true, last4: 'WXYZ', source: 'keyring' });
      case 'set_settings':
        if (options.rejectSave) throw { kind: 'invalid', message: options.rejectSave };
        return a.settings;
    }
    return null;
  });
  const props = { onclose: vi.fn(), onsaved: vi.fn() };
  render(SettingsDialog, props);
  return { calls, props };
}

describe('SettingsDialog', () => {
  it('shows the stored settings, the budget and the key as the window may know it', async () => {
    renderDialog();
    expect(await screen.findByLabelText('Provider')).toHaveValue('anthropic');
    expect(screen.getByLabelText('Model')).toHaveAttribute('placeholder', 'claude-sonnet-4-5');
    expect(screen.getByLabelText('Cost limit (US dollars)')).toHaveValue(2);
    expect(screen.getByLabelText('Token limit')).toHaveValue(null);
    expect(screen.getByRole('status')).toHaveTextContent('Key set (ends in WXYZ)');
    expect(await screen.findByRole('option', { name: /1: HDMI-1 \(1920 × 1200\)/ })).toBeInTheDocument();
  });

  it('saves provider, model, base URL, budget, monitor, screenshot size and effort', async () => {
    const { calls, props } = renderDialog();
    const providerField = await screen.findByLabelText('Provider');
    await userEvent.selectOptions(providerField, 'ollama');
    expect(await screen.findByText('Ollama (local) needs no API key.')).toBeInTheDocument();
    expect(calls).toContainEqual({ cmd: 'key_status', args: { provider: 'ollama' } });
    expect(screen.getByLabelText('Base URL')).toHaveAttribute('placeholder', 'http://localhost:11434/v1');
    await userEvent.type(screen.getByLabelText('Model'), 'qwen2.5-vl');
    await userEvent.type(screen.getByLabelText('Base URL'), 'http://gpu-box:11434/v1');
    await userEvent.clear(screen.getByLabelText('Cost limit (US dollars)'));
    await userEvent.type(screen.getByLabelText('Token limit'), '200000');
    await userEvent.selectOptions(await screen.findByLabelText('Monitor'), '1: HDMI-1 (1920 × 1200)');
    await userEvent.selectOptions(screen.getByLabelText('Screenshot size sent to the model'), 'At most 1024 × 768 (cheapest)');
    expect(screen.getByLabelText('Effort')).toHaveValue('');
    await userEvent.selectOptions(screen.getByLabelText('Effort'), 'Max');
    await userEvent.click(screen.getByRole('button', { name: 'Save' }));
    const saved = {
      ...stored,
      provider: 'ollama',
      model: 'qwen2.5-vl',
      base_url: 'http://gpu-box:11434/v1',
      monitor: 1,
      screenshot_size: { width: 1024, height: 768 },
      max_cost_usd: null,
      max_tokens: 200000,
      effort: 'max',
    };
    await waitFor(() => expect(props.onsaved).toHaveBeenCalledWith(saved));
    expect(calls).toContainEqual({ cmd: 'set_settings', args: { settings: saved } });
    expect(props.onclose).toHaveBeenCalled();
  });

  it('shows set-of-marks off by default and saves it turned on', async () => {
    const { calls, props } = renderDialog();
    const toggle = await screen.findByLabelText('Number the buttons and fields on each screenshot (set-of-marks)');
    expect(toggle).not.toBeChecked();
    await userEvent.click(toggle);
    await userEvent.click(screen.getByRole('button', { name: 'Save' }));
    const saved = { ...stored, set_of_marks: true };
    await waitFor(() => expect(props.onsaved).toHaveBeenCalledWith(saved));
    expect(calls).toContainEqual({ cmd: 'set_settings', args: { settings: saved } });
  });

  it('shows why settings were refused and stays open', async () => {
    const { props } = renderDialog({ rejectSave: 'the turn limit must be between 1 and 1000' });
    await userEvent.click(await screen.findByRole('button', { name: 'Save' }));
    expect(await screen.findByRole('alert')).toHaveTextContent('the turn limit must be between 1 and 1000');
    expect(props.onclose).not.toHaveBeenCalled();
  });

  it('explains a missing keyring with the way out', async () => {
    renderDialog({ keyring: 'no OS keyring is available. Start a keyring daemon … or set ANTHROPIC_API_KEY' });
    expect(await screen.findByRole('alert')).toHaveTextContent(
      'The system keyring is not available, so Deskhand cannot store a key: no OS keyring is available. Start a keyring daemon … or set ANTHROPIC_API_KEY',
    );
  });
});
