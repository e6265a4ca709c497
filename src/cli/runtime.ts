/**
 * What commands get from the composition root (src/compose.ts): the runtime and the stores and
 * broker as interface types. Commands never import an adapter.
 */
export {createArchiver, createRuntime, openBroker, openAdmin, openOutbox, openSchema, openStore, type Runtime} from '../compose.js';
