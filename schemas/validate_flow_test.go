package schemas

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// nestedLoops is a step of depth loops, one inside the other, around a set step.
func nestedLoops(depth int) string {
	s := `{"id":"leaf","set":1}`
	for i := range depth {
		s = fmt.Sprintf(`{"id":"l%d","loop":{"until":"${{ true }}","maxIterations":2,"steps":[%s]}}`, i, s)
	}
	return s
}

func TestValidateFlowValid(t *testing.T) {
	t.Parallel()
	for name, doc := range map[string][]byte{
		"parallel": stepsWith(t, `{"id":"quotes","parallel":{"failFast":false,"branches":[
			{"id":"fedex","steps":[{"id":"ask","set":"${{ steps.first.output }}"}]},
			{"id":"ups","steps":[{"id":"ask","set":1},{"id":"again","set":"${{ steps.ask.output }}"}]}]}}`,
			`{"id":"after","set":"${{ steps.quotes.output.fedex }}"}`),
		"foreach": stepsWith(t, `{"id":"each","foreach":{"items":"${{ input.orders }}","as":"order","concurrency":5,"steps":[
			{"id":"charge","set":"${{ order.id }}-${{ index }}","compensate":{"set":"${{ steps.charge.output }} ${{ run.error.code }}"}},
			{"id":"note","onError":"continue","set":"${{ steps.charge.error.code }}"}]}}`),
		"foreach literal":  stepsWith(t, `{"id":"each","foreach":{"items":[1,2],"steps":[{"id":"x","set":"${{ item }}"}]}}`),
		"foreach workflow": stepsWith(t, `{"id":"each","foreach":{"items":"${{ input.urls }}","workflow":{"name":"summarize","input":{"url":"${{ item }}","at":"${{ steps.first.output }}"}}}}`),
		"loop": stepsWith(t, `{"id":"poll","loop":{"until":"${{ steps.check.output == iteration }}","maxIterations":20,"steps":[
			{"id":"check","set":"${{ iteration }}"}]}}`),
		"loop in foreach":      stepsWith(t, `{"id":"each","foreach":{"items":[1],"steps":[{"id":"poll","loop":{"until":"${{ item == iteration }}","maxIterations":3,"steps":[{"id":"c","set":"${{ index }}"}]}}]}}`),
		"nesting at the bound": stepsWith(t, nestedLoops(MaxNesting)),
		"onFailure":            defWith(t, map[string]any{"onFailure": []any{map[string]any{"id": "tell", "set": "${{ run.error.message }} ${{ steps.first.output }}"}}}),
	} {
		d, err := Decode(doc)
		require.NoError(t, err, name)
		require.Empty(t, Validate(d, ValidateOptions{}), name)
	}
}

func TestValidateFlowProblems(t *testing.T) {
	t.Parallel()
	branches := make([]string, MaxBranches+1)
	for i := range branches {
		branches[i] = fmt.Sprintf(`{"id":"b%d","steps":[{"id":"a","set":1}]}`, i)
	}
	tooMany := make([]string, MaxSteps)
	for i := range tooMany {
		tooMany[i] = fmt.Sprintf(`{"id":"s%d","set":1}`, i)
	}
	tests := []struct {
		name, doc, path, msg string
	}{
		{"unknown kind in a branch", `{"id":"p","parallel":{"branches":[{"id":"b","steps":[{"id":"a","htpp":{}}]}]}}`, "/steps/1/parallel/branches/0/steps/0/htpp", "unknown step kind"},
		{"unknown kind in foreach", `{"id":"f","foreach":{"items":[1],"steps":[{"id":"a"}]}}`, "/steps/1/foreach/steps/0", "no kind"},
		{"duplicate ids in a list", `{"id":"l","loop":{"until":"${{ true }}","maxIterations":1,"steps":[{"id":"a","set":1},{"id":"a","set":2}]}}`, "/steps/1/loop/steps/1/id", "already used"},
		{"duplicate branch ids", `{"id":"p","parallel":{"branches":[{"id":"b","steps":[{"id":"a","set":1}]},{"id":"b","steps":[{"id":"a","set":1}]}]}}`, "/steps/1/parallel/branches/1/id", "already used"},
		{"branch id missing", `{"id":"p","parallel":{"branches":[{"steps":[{"id":"a","set":1}]}]}}`, "/steps/1/parallel/branches/0/id", "required"},
		{"branch id reserved", `{"id":"p","parallel":{"branches":[{"id":"compensate","steps":[{"id":"a","set":1}]}]}}`, "/steps/1/parallel/branches/0/id", "reserved"},
		{"no branches", `{"id":"p","parallel":{"branches":[]}}`, "/steps/1/parallel/branches", "at least one"},
		{"too many branches", `{"id":"p","parallel":{"branches":[` + strings.Join(branches, ",") + `]}}`, "/steps/1/parallel/branches", "at most 100"},
		{"empty branch", `{"id":"p","parallel":{"branches":[{"id":"b","steps":[]}]}}`, "/steps/1/parallel/branches/0/steps", "at least one"},
		{"nesting past the bound", nestedLoops(MaxNesting + 1), "/steps/1" + strings.Repeat("/loop/steps/0", MaxNesting) + "/loop/steps", "more than 8"},
		{"foreach steps and workflow", `{"id":"f","foreach":{"items":[1],"steps":[{"id":"a","set":1}],"workflow":{"name":"w"}}}`, "/steps/1/foreach", "not both"},
		{"foreach neither", `{"id":"f","foreach":{"items":[1]}}`, "/steps/1/foreach", "needs steps or a workflow"},
		{"foreach items missing", `{"id":"f","foreach":{"steps":[{"id":"a","set":1}]}}`, "/steps/1/foreach/items", "required"},
		{"foreach items not array", `{"id":"f","foreach":{"items":"abc","steps":[{"id":"a","set":1}]}}`, "/steps/1/foreach/items", "must be an array"},
		{"foreach items expression", `{"id":"f","foreach":{"items":"${{ input. }}","steps":[{"id":"a","set":1}]}}`, "/steps/1/foreach/items", "expression"},
		{"foreach items reads itself", `{"id":"f","foreach":{"items":"${{ steps.f.output }}","steps":[{"id":"a","set":1}]}}`, "/steps/1/foreach/items", "only earlier steps"},
		{"foreach concurrency", `{"id":"f","foreach":{"items":[1],"concurrency":101,"steps":[{"id":"a","set":1}]}}`, "/steps/1/foreach/concurrency", "between 1 and 100"},
		{"foreach as reserved", `{"id":"f","foreach":{"items":[1],"as":"steps","steps":[{"id":"a","set":1}]}}`, "/steps/1/foreach/as", "must be a name"},
		{"foreach as not a name", `{"id":"f","foreach":{"items":[1],"as":"a-b","steps":[{"id":"a","set":1}]}}`, "/steps/1/foreach/as", "must be a name"},
		{"item outside foreach", `{"id":"a","set":"${{ item }}"}`, "/steps/1/set", "unknown name"},
		{"workflow name in foreach", `{"id":"f","foreach":{"items":[1],"workflow":{}}}`, "/steps/1/foreach/workflow/name", "required"},
		{"loop without maxIterations", `{"id":"l","loop":{"until":"${{ true }}","steps":[{"id":"a","set":1}]}}`, "/steps/1/loop/maxIterations", "required"},
		{"loop past MaxIterations", `{"id":"l","loop":{"until":"${{ true }}","maxIterations":1001,"steps":[{"id":"a","set":1}]}}`, "/steps/1/loop/maxIterations", "between 1 and 1000"},
		{"loop without until", `{"id":"l","loop":{"maxIterations":2,"steps":[{"id":"a","set":1}]}}`, "/steps/1/loop/until", "required"},
		{"until out of scope", `{"id":"l","loop":{"until":"${{ steps.ghost.output }}","maxIterations":2,"steps":[{"id":"a","set":1}]}}`, "/steps/1/loop/until", `no step "ghost"`},
		{"iteration outside loop", `{"id":"a","set":"${{ iteration }}"}`, "/steps/1/set", "unknown name"},
		{"nested step of another branch", `{"id":"p","parallel":{"branches":[{"id":"b","steps":[{"id":"a","set":1}]},{"id":"c","steps":[{"id":"x","set":"${{ steps.a.output }}"}]}]}}`, "/steps/1/parallel/branches/1/steps/0/set", `no step "a"`},
		{"nested step from outside", `{"id":"l","loop":{"until":"${{ true }}","maxIterations":1,"steps":[{"id":"inner","set":1}]}}`, "/steps/2/set", `no step "inner"`},
		{"enclosing step from inside", `{"id":"l","loop":{"until":"${{ true }}","maxIterations":1,"steps":[{"id":"a","set":"${{ steps.l.output }}"}]}}`, "/steps/1/loop/steps/0/set", "only earlier steps"},
		{"later outer step from inside", `{"id":"l","loop":{"until":"${{ true }}","maxIterations":1,"steps":[{"id":"a","set":"${{ steps.z.output }}"}]}}`, "/steps/1/loop/steps/0/set", "only earlier steps"},
		{"onError unknown", `{"id":"a","set":1,"onError":"ignore"}`, "/steps/1/onError", "must be fail or continue"},
		{"compensate compound", `{"id":"a","set":1,"compensate":{"loop":{"until":"${{ true }}","maxIterations":1,"steps":[{"id":"b","set":1}]}}}`, "/steps/1/compensate", "cannot be a loop"},
		{"compensate of compensate", `{"id":"a","set":1,"compensate":{"set":1,"compensate":{"set":2}}}`, "/steps/1/compensate/compensate", "no compensation of its own"},
		{"compensate no kind", `{"id":"a","set":1,"compensate":{}}`, "/steps/1/compensate", "no kind"},
		{"compensate reads later", `{"id":"a","set":1,"compensate":{"set":"${{ steps.z.output }}"}}`, "/steps/1/compensate/set", "only earlier steps"},
		{"compensate onError", `{"id":"a","set":1,"compensate":{"set":1,"onError":"continue"}}`, "/steps/1/compensate/onError", "no onError"},
		{"too many nested steps", `{"id":"l","loop":{"until":"${{ true }}","maxIterations":1,"steps":[` + strings.Join(tooMany, ",") + `]}}`, "/steps", "at most 1000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, err := Decode(stepsWith(t, tc.doc, `{"id":"z","set":"${{ steps.inner.output }}"}`))
			require.NoError(t, err)
			var found bool
			problems := Validate(d, ValidateOptions{})
			for _, p := range problems {
				if p.Path == tc.path && strings.Contains(p.Message, tc.msg) {
					found = true
				}
			}
			require.True(t, found, "want %s %q in %+v", tc.path, tc.msg, problems)
		})
	}
}

func TestValidateOnFailureProblems(t *testing.T) {
	t.Parallel()
	d, err := Decode(defWith(t, map[string]any{"onFailure": []any{
		map[string]any{"id": "a", "set": 1}, map[string]any{"id": "a", "set": "${{ steps.ghost.output }}"},
	}}))
	require.NoError(t, err)
	var paths []string
	for _, p := range Validate(d, ValidateOptions{}) {
		paths = append(paths, p.Path)
	}
	require.Equal(t, []string{"/onFailure/1/id", "/onFailure/1/set"}, paths)
}

func TestFlowStepsRoundTrip(t *testing.T) {
	t.Parallel()
	doc := stepsWith(t, `{"id":"p","onError":"continue","compensate":{"set":2},"parallel":{"branches":[{"id":"b","steps":[{"id":"f","foreach":{"items":[1],"as":"x","concurrency":2,"steps":[{"id":"l","loop":{"until":"${{ true }}","maxIterations":3,"steps":[{"id":"s","set":null}]}}]}}]}]}}`)
	d, err := Decode(doc)
	require.NoError(t, err)
	out, err := Marshal(d)
	require.NoError(t, err)
	again, err := Decode(out)
	require.NoError(t, err)
	require.Equal(t, d, again)
	require.Equal(t, KindParallel, d.Steps[1].Kind())
	require.Equal(t, "x", d.Steps[1].Parallel.Branches[0].Steps[0].Foreach.ItemName())
}

func TestFlowReachesOutAndWrites(t *testing.T) {
	t.Parallel()
	get := Step{ID: "g", HTTP: &HTTPStep{URL: "https://x", Method: "GET"}}
	post := Step{ID: "p", HTTP: &HTTPStep{URL: "https://x", Method: "POST"}}
	set := Step{ID: "s", Set: &SetStep{Value: 1}}
	inLoop := func(s Step) Step {
		return Step{ID: "l", Loop: &LoopStep{Until: "x", MaxIterations: 1, Steps: []Step{s}}}
	}
	withComp := set
	withComp.Compensate = &post
	require.True(t, reachesOut(inLoop(get)))
	require.False(t, mayWrite(inLoop(get)))
	require.True(t, mayWrite(inLoop(post)))
	require.False(t, reachesOut(inLoop(set)))
	require.True(t, mayWrite(withComp))
	require.True(t, reachesOut(Step{ID: "f", Foreach: &ForeachStep{Items: "x", Workflow: &WorkflowStep{Name: "w"}}}))
}
