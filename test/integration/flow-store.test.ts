import {flowStoreConformance} from '../conformance/flow.js';
import {mysqlStoreHarness} from '../helpers/mysql-harness.js';

flowStoreConformance('MySQL', mysqlStoreHarness);
