/// <reference types="vitest/config" />
import { defineConfig } from 'vite';
import { svelte } from '@sveltejs/vite-plugin-svelte';
import { svelteTesting } from '@testing-library/svelte/vite';

// Tauri embeds `ui/dist` in the built app; a development build loads this dev server, at
// exactly http://127.0.0.1:1420 (tauri.conf.json's devUrl): if the port is taken Vite stops
// instead of moving, so the window never loads whatever else answers there.
export default defineConfig({
  plugins: [svelte(), svelteTesting()],
  clearScreen: false,
  server: { host: '127.0.0.1', port: 1420, strictPort: true },
  build: { outDir: 'dist', emptyOutDir: true },
  test: {
    environment: 'jsdom',
    setupFiles: ['./src/test/setup.ts'],
    include: ['src/**/*.test.ts'],
    // CI machines are small and shared: a component test that types into inputs can take
    // several seconds there, and a timeout leaves its typing running into the next test.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'threads',
    poolOptions: { threads: { maxThreads: 2, minThreads: 1 } },
  },
});
