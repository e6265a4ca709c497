// The composition root of the ax build under test: dist/compose.js, or dist/cli/runtime.js in a
// revision from before it existed (bench --compare runs this harness against older trees too).
import {existsSync} from 'node:fs';

const compose = new URL('../../dist/compose.js', import.meta.url);
const root = await import(existsSync(compose) ? compose.href : new URL('../../dist/cli/runtime.js', import.meta.url).href);
export const {createRuntime, openBroker, openDatabase, openOutbox, openStore} = root;
