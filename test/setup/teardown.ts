import { teardown } from './servers';

export default teardown;
