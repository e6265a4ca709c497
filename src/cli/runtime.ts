/**
 * What commands get from the composition root (src/compose.ts): the runtime and the stores and
 * broker as interface types. Commands never import an adapter.
 */
export {createRuntime, openBroker, openClient, openOutbox, openSchema, openStore, type Runtime} from '../compose.js';
