// Package deploy holds no code: its tests check the container image's build (the root
// Dockerfile) and the compose files beside them (SPEC §7).
package deploy
