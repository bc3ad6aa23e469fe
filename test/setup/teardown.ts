import { teardown } from './postgres';

export default teardown;
