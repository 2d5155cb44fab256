/** kubectl as the cluster tests drive it: moved to the test kit (test/kit/kubectl.ts); re-exported for test/security. */
export { kubectlFor, type Kubectl, type KubectlResult } from '../kit/kubectl.ts';
