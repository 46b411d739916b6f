/**
 * The sidebar's Simplified Chinese words, by their English form in the code (`__('English')`).
 * A test checks that every `__('...')` string in src/ has its entry here.
 */
export const ZH: Record<string, string> = {
  Chat: '对话',
  Skills: '技能',
  Reports: '报告',
  Experience: '经验',
  Preferences: '偏好',
  Models: '模型',

  // -- part E (one language; Reports, Experience, Preferences, Skills, export) --------------------------
  'Generate report': '生成报告',
  "Generate the session's report": '生成本会话的报告',
  English: '英文',
  Chinese: '中文',
  'Language of the report': '报告的语言',
  'Open or start a chat session to see its reports.':
    '打开或开始一个对话会话，查看它的报告。',
  'Writing the report…': '正在撰写报告…',
  'Report written: %1': '报告已写好：%1',
  'No report yet.': '还没有报告。',
  Open: '打开',
  'Open the report %1': '打开报告 %1',
  'Download %1': '下载 %1',
  'Report: %1': '报告：%1',
  'Export notebook': '导出笔记本',
  'Export Markdown': '导出 Markdown',
  "On: each step of the notebook re-runs in nini's sandbox, through %%nini_run. Off: the steps are plain cells that run in your own kernel, unsandboxed.":
    '勾选：笔记本的每一步通过 %%nini_run 在 nini 的沙箱中重新运行。不勾选：每一步是普通单元格，在你自己的内核中运行，没有沙箱。',
  "Re-run in nini's sandbox": '在 nini 的沙箱中重新运行',
  "Export the session as a notebook that re-runs in nini's sandbox":
    '把会话导出为在 nini 沙箱中重新运行的笔记本',
  'Export the session as a notebook of plain cells (unsandboxed)':
    '把会话导出为普通单元格的笔记本（没有沙箱）',
  'Export the session as Markdown': '把会话导出为 Markdown',
  'Review plan': '查看计划',
  Confirm: '确认',
  Deprecate: '弃用',
  'Candidates to confirm': '待确认的候选',
  'Pending candidates': '待处理的候选',
  "Review the curator's plan for the chosen candidates":
    '查看整理者对所选候选的计划',
  Refresh: '刷新',
  'Reload the candidates and the libraries': '重新读取候选和经验库',
  'To confirm': '待确认',
  'What to remember: the choice, what it rejects and why (e.g. use the median, the revenue column has outliers)':
    '要记住什么：做出的选择、放弃了什么以及原因（例如：用中位数，收入列有离群值）',
  'Experience to remember': '要记住的经验',
  'Library of the new candidate': '新候选所属的经验库',
  Add: '添加',
  'Add it as a pending candidate': '添加为待处理的候选',
  'Add an experience': '添加一条经验',
  'Plan to confirm': '待确认的计划',
  'Confirm: write this plan to the libraries': '确认：把这个计划写入经验库',
  'Cancel: write nothing, keep the candidates pending':
    '取消：什么都不写，候选保持待处理',
  'Nothing was written; the candidates stay pending.':
    '什么都没有写入；候选仍待处理。',
  'The plan (nothing is written until you confirm):':
    '计划（你确认之前不会写入任何内容）：',
  Library: '经验库',
  'Show deprecated': '显示已弃用的',
  'Experience entries': '经验条目',
  'Experience document': '经验文档',
  Close: '关闭',
  'Close the document': '关闭文档',
  'What this run was given': '本次运行得到的经验',
  "The chat session's experience records": '对话会话的经验记录',
  'Open or start a chat session to see the experience its runs were given.':
    '打开或开始一个对话会话，查看它的运行得到的经验。',
  'No candidate waits for you.': '没有等你处理的候选。',
  'Choose %1': '选择 %1',
  Decision: '决定',
  'Rejected alternatives': '放弃的做法',
  Signal: '信号',
  When: '适用时机',
  'Scores of %1': '%1 的评分',
  Overall: '总分',
  'Library for %1': '%1 所属的经验库',
  Discard: '丢弃',
  'Discard %1': '丢弃 %1',
  To: '存入',
  'Added: %1. Review it, then choose it to deposit.':
    '已添加：%1。检查后选中它即可存入。',
  'Not kept as a candidate (%1).': '没有保留为候选（%1）。',
  'already pending': '已在待处理中',
  'Discarded: %1.': '已丢弃：%1。',
  'Choose at least one candidate to review its plan.':
    '至少选择一个候选，才能查看计划。',
  'Check the plan, then Confirm to write it or Cancel to keep the candidates pending.':
    '检查计划，然后点“确认”写入，或点“取消”让候选保持待处理。',
  'The library changed since the plan was shown. This is the new plan: confirm it again, or cancel.':
    '显示计划之后经验库有了变化。这是新的计划：请再次确认，或取消。',
  'Only deprecated entries.': '只有已弃用的条目。',
  'No experience deposited yet.': '还没有存入任何经验。',
  'Open %1 %2: %3': '打开%1 %2：%3',
  'Deprecate %1': '弃用 %1',
  'Deprecate %1?': '弃用 %1？',
  '"%1" will no longer be given to runs. Its file stays in the %2 library.':
    '“%1”将不再提供给运行。它的文件仍留在%2经验库中。',
  'No experience was given to or captured from this session yet.':
    '这个会话还没有得到或沉淀任何经验。',
  'Library: nini decides': '经验库：由 nini 决定',
  'Library: %1': '经验库：%1',
  team: '团队',
  project: '项目',
  standard: '规范',
  knowledge: '知识',
  experience: '经验',
  hypothesis: '假设',
  validated: '已验证',
  enforced: '强制',
  active: '有效',
  deprecated: '已弃用',
  Structure: '结构',
  Judgement: '判断',
  Reusability: '可复用性',
  Fit: '契合度',
  ' (stage: %1)': '（阶段：%1）',
  'Warned at the start of the run%1': '运行开始时给出的提醒%1',
  '%1 · %2 %3 · score %4': '%1 · %2 %3 · 得分 %4',
  'Captured after the run%1: %2 kept, %3 dropped':
    '运行结束后沉淀%1：保留 %2 条，舍弃 %3 条',
  'Kept: %1': '保留：%1',
  'Dropped: %1 (%2)': '舍弃：%1（%2）',
  'Learn from my feedback': '从我的反馈中学习',
  'Put them into prompts': '把它们放进提示词',
  answer: '回答',
  report: '报告',
  chart: '图表',
  'Skill type of the preview': '预览的技能类型',
  'The block the next prompt carries': '下一次提示词带上的内容',
  'Next prompt': '下一次提示词',
  Rules: '规则',
  'No preferences yet: add one, or give feedback on answers.':
    '还没有偏好：添加一条，或对回答给出反馈。',
  global: '全局',
  'this project': '本项目',
  explicit: '明确设定',
  implicit: '从反馈学得',
  '%1 · %2 · %3 evidence · %4': '%1 · %2 · %3 条证据 · %4',
  Edit: '编辑',
  'Edit the value of %1': '编辑 %1 的值',
  'key, e.g. tone': '键，例如 tone',
  'value, e.g. formal': '值，例如 formal',
  'Key of the new rule': '新规则的键',
  'Value of the new rule': '新规则的值',
  'This project only': '仅本项目',
  'this project only': '仅本项目',
  'Add rule': '添加规则',
  'Added %1.': '已添加 %1。',
  'Edit %1': '编辑 %1',
  Save: '保存',
  'Saved %1 (now yours: confidence 1.00).':
    '已保存 %1（现在是你设定的：置信度 1.00）。',
  'Delete %1?': '删除 %1？',
  'The next run is given the other preferences only.':
    '下一次运行只会得到其余的偏好。',
  'Deleted %1.': '已删除 %1。',
  'Learning %1, injection %2.': '学习：%1，注入：%2。',
  on: '开',
  off: '关',
  'No exclamation marks': '不用感叹号',
  'Shorter, conclusion first': '更简短，结论先行',
  'More detail': '更详细',
  'Formal tone': '语气正式',
  'Casual tone': '语气轻松',
  'Answer in Chinese': '用中文回答',
  'Answer in English': '用英文回答',
  'Fewer decimals': '更少的小数位',
  'Minimal charts': '图表尽量简洁',
  'No emoji': '不用表情符号',
  accept: '采纳',
  reject: '不采纳',
  partial: '部分采纳',
  '%1 cancelled out': '%1 已相互抵消',
  'Recorded: %1': '已记录：%1',
  data: '数据',
  statistics: '统计',
  visualization: '可视化',
  export: '导出',
  workflow: '工作流',
  utility: '工具',
  'experiment design': '实验设计',
  other: '其他',
  'Search skills': '搜索技能',
  'All types': '所有类型',
  Function: '函数',
  Markdown: 'Markdown',
  'Skill type': '技能类型',
  'New skill': '新建技能',
  'Create a new Markdown skill': '新建一个 Markdown 技能',
  'Reload the skills': '重新读取技能',
  'name-in-kebab-case': '短横线连接的名字，如 sales-trend',
  'Skill name': '技能名称',
  'What it does and when to use it': '它做什么，什么时候用',
  'Skill description': '技能描述',
  'Skill category': '技能类别',
  Create: '创建',
  'Created %1.': '已创建 %1。',
  'Enable %1': '启用 %1',
  'Open the SKILL.md of %1': '打开 %1 的 SKILL.md',
  '%1 enabled.': '%1 已启用。',
  '%1 disabled.': '%1 已停用。',
  'Open nini': '打开 nini',
  'Chat with the nini agent about your data': '和 nini 智能体聊聊你的数据',
  'nini: New Chat': 'nini：新对话',
  'nini: Stop the Run': 'nini：停止运行',
  'nini: Generate Report': 'nini：生成报告',
  'nini: Open Experience': 'nini：打开经验',
  'Confirm experience candidates, read the libraries, see what the run was given':
    '确认经验候选、阅读经验库、查看运行得到的经验',
  'nini: Open Preferences': 'nini：打开偏好',
  'See, change and switch the preferences nini learned or you wrote':
    '查看、修改和开关 nini 学到的或你写下的偏好',
  'nini: Attach cell to question': 'nini：把单元格附加到问题',
  'Send the selected cells with your next question to nini':
    '把选中的单元格随下一个问题发给 nini',
  'nini: Attach file to question': 'nini：把文件附加到问题',
  "Send the selected files' text with your next question to nini":
    '把选中文件的文本随下一个问题发给 nini',
  'Pending: your choice': '待定：由你决定',
  Accepted: '已采纳',
  Rejected: '已拒绝',
  code: '代码',
  'Proposed %1 cell at position %2': '建议在位置 %2 插入 %1 单元格',
  'Proposed change to cell %1 (%2)': '建议修改单元格 %1（%2）',
  Accept: '采纳',
  'Accept and run': '采纳并运行',
  'Accept: insert this cell into the notebook': '采纳：把这个单元格插入笔记本',
  'Accept and run this cell': '采纳并运行这个单元格',
  'Reject this proposal': '拒绝这个建议',
  'Accepted and run': '已采纳并运行',
  'open the notebook to accept this proposal': '请打开笔记本后再采纳这个建议',
  'Saved with warnings: %1.': '已保存，有警告：%1。',
  'Saved.': '已保存。',
  'Save the SKILL.md (validated)': '保存 SKILL.md（会先校验）',
  'A %1 skill: saving makes your own copy, which takes its place.':
    '这是 %1 技能：保存会生成你自己的副本，并取代它。',
  Ask: '提问',
  'New chat': '新对话',
  'Start a new chat': '开始新对话',
  Conversation: '对话记录',
  'Ask nini about your data (Enter sends, Shift+Enter adds a line)':
    '向 nini 询问你的数据（Enter 发送，Shift+Enter 换行）',
  Question: '问题',
  'Ask nini': '向 nini 提问',
  'After the answer': '回答之后',
  'Connection lost; reconnecting in %1 s…': '连接已断开；%1 秒后重新连接…',
  'Stopped: the run was cancelled.': '已停止：这次运行被取消了。',
  'The run ended unfinished (%1).': '这次运行没有完成就结束了（%1）。',
  // -- end of part E (next part: append your block below, each entry ending with a comma)
  // -- part D (feedback thumbs, Models guided, the error codes' sentences) ----------------------------
  'Something in the request is not right: check what you entered and try again.':
    '请求中有内容不对：检查你输入的内容后再试一次。',
  'That is not there any more (deleted, renamed or never made): refresh and pick it again.':
    '它已经不在了（被删除、改名或从未创建）：刷新后重新选择。',
  'This clashes with something already going on: wait for the current run to end, then try again.':
    '这与正在进行的操作冲突：等当前运行结束后再试一次。',
  'That is larger than this server allows: use a smaller file or ask for less, or ask an administrator to raise the limit.':
    '超出了本服务器允许的大小：换一个更小的文件或少要一些内容，或请管理员提高上限。',
  'nini refused this to keep your data and the server safe: change what the details name, or ask an administrator.':
    '为了保护你的数据和服务器，nini 拒绝了这一操作：修改详情中指出的内容，或询问管理员。',
  'This took too long and was stopped: try again, or split the work into smaller steps.':
    '用时过长，已被停止：再试一次，或把工作拆成更小的步骤。',
  'This was stopped before it finished: ask again to go on.':
    '它在完成前被停止了：再问一次即可继续。',
  'The code itself failed: read its message, then fix the code or ask nini to fix it.':
    '代码本身出错了：阅读错误信息，然后修改代码，或让 nini 来修改。',
  "nini could not read or write its history: try again; if it keeps happening, check the server's disk and database.":
    'nini 无法读写它的历史记录：再试一次；如果一直出现，请检查服务器的磁盘和数据库。',
  "The server's disk is full: free some space (old sessions, datasets, reports) or ask an administrator, then try again.":
    '服务器的磁盘满了：请释放一些空间（旧会话、数据集、报告），或联系管理员，然后再试一次。',
  'The Python kernel stopped, often for lack of memory: ask again to start a fresh one, on less data if it happens again.':
    'Python 内核停止了，通常是内存不足：再问一次会启动一个新内核；如果再次发生，请用更少的数据。',
  'The R worker stopped, often for lack of memory: ask again to start a fresh one, on less data if it happens again.':
    'R 工作进程停止了，通常是内存不足：再问一次会启动一个新进程；如果再次发生，请用更少的数据。',
  'R cannot run on this server: ask for Python instead, or ask an administrator to install R and rpy2.':
    '本服务器无法运行 R：改用 Python，或请管理员安装 R 和 rpy2。',
  'No language model is ready to answer: add a provider, or fix the one you have, in the Models tab.':
    '没有可以回答的语言模型：在“模型”标签页添加一个提供方，或修好现有的。',
  'The model provider failed or could not be reached: try again later, or test the provider in the Models tab.':
    '模型提供方出错或无法连接：稍后再试，或在“模型”标签页测试该提供方。',
  "A skill's instructions could not be read: open it in the Skills tab to fix it, or disable it.":
    '无法读取某个技能的说明：在“技能”标签页打开并修复它，或停用它。',
  "Something went wrong inside nini: try again; if it keeps happening, report it with the server's log.":
    'nini 内部出错了：再试一次；如果一直出现，请附上服务器日志报告问题。',
  'The Jupyter server cannot be reached: check that it is still running and that you are online, then try again.':
    '无法连接 Jupyter 服务器：确认它仍在运行、网络正常，然后再试一次。',
  'The server answered with an unexpected error (HTTP %1): reload the page and try again.':
    '服务器返回了意外的错误（HTTP %1）：刷新页面后再试一次。',
  'Good report': '报告很好',
  'Bad report: say why': '报告不好：说明原因',
  'Partly good report: say what to change': '报告部分可用：说明要改什么',
  'Good answer': '回答很好',
  'Bad answer: say why': '回答不好：说明原因',
  'Partly good answer: say what to change': '回答部分可用：说明要改什么',
  'Feedback on this report': '对这份报告的反馈',
  'Feedback on this answer': '对这个回答的反馈',
  Partly: '部分可用',
  'What should change?': '应该改什么？',
  'What should change? (optional)': '应该改什么？（可选）',
  'Your comment': '你的意见',
  Send: '发送',
  'OpenAI-compatible': 'OpenAI 兼容',
  Anthropic: 'Anthropic',
  'Replay (a recorded script)': '回放（录制的脚本）',
  'Qwen (DashScope)': '通义千问（DashScope）',
  'Enter a full address, like http://localhost:11434/v1':
    '请输入完整地址，例如 http://localhost:11434/v1',
  'The address must start with http:// or https://':
    '地址必须以 http:// 或 https:// 开头',
  'The address must not carry a key: put the key in an environment variable':
    '地址中不能带密钥：请把密钥放在环境变量里',
  'Give the provider a name, like ollama': '给提供方起个名字，例如 ollama',
  'Use letters, digits, dots, dashes or underscores (at most 64), starting with a letter or digit':
    '只能用字母、数字、点、短横线或下划线（最多 64 个），并以字母或数字开头',
  'Choose a kind': '请选择类型',
  'Name the model to call, like %1': '填写要调用的模型，例如 %1',
  'This looks like a key: a key goes into an environment variable, never into the form':
    '这看起来像是密钥：密钥应放在环境变量里，不要填进表单',
  'Enter the name of an environment variable (like DEEPSEEK_API_KEY), not the key itself':
    '请填写环境变量的名字（例如 DEEPSEEK_API_KEY），而不是密钥本身',
  Name: '名称',
  'Base URL': '基础 URL',
  Model: '模型',
  'API key environment variable': 'API 密钥环境变量',
  'Test every purpose': '测试每种用途',
  'These providers belong to this server: only its administrators (server.admins) can change them. You can test them.':
    '这些提供方属于本服务器：只有它的管理员（server.admins）可以修改。你可以测试它们。',
  Providers: '提供方',
  'Make one tiny call to the model each purpose would use first':
    '对每种用途首选的模型各做一次很小的调用',
  'Test results per model': '每个模型的测试结果',
  'Add or edit a provider': '添加或编辑提供方',
  'Model per purpose': '各用途使用的模型',
  'Start from a preset': '从预设开始',
  'Start from:': '从预设开始：',
  'Fill the form for %1 (%2)': '按 %1（%2）填写表单',
  'Enter the name of the model your %1 server has loaded.':
    '请填写你的 %1 服务器已加载的模型名称。',
  Kind: '类型',
  'Save the provider to settings.json': '把提供方保存到 settings.json',
  Test: '测试',
  'Test the provider with one small call': '用一次很小的调用测试该提供方',
  'Fix the marked fields first.': '请先修正标出的字段。',
  'No key variable: right for a local server (Ollama, vLLM, LM Studio) that wants no key.':
    '没有密钥变量：适用于不需要密钥的本地服务器（Ollama、vLLM、LM Studio）。',
  'not usable: %1': '不可用：%1',
  usable: '可用',
  'Test %1 with one small call': '用一次很小的调用测试 %1',
  'No provider yet: pick a preset below.': '还没有提供方：在下面选一个预设。',
  'No provider yet.': '还没有提供方。',
  'no usable model': '没有可用的模型',
  'Saved %1 to settings.json.': '已把 %1 保存到 settings.json。',
  'Testing %1…': '正在测试 %1…',
  'the provider': '该提供方',
  'OK: %1 answered in %2 ms': '成功：%1 用 %2 毫秒作答',
  'no reason given': '没有给出原因',
  'Failed: %1': '失败：%1',
  'Testing…': '正在测试…',
  OK: '成功',
  Failed: '失败',
  'No model to test: add a provider.': '没有可测试的模型：请添加一个提供方。',
  '%1 is set on the server (its value is never shown here).':
    '服务器上已设置 %1（这里从不显示它的值）。',
  '%1 is not set on the server. Set it where JupyterLab starts, then restart JupyterLab:':
    '服务器上没有设置 %1。请在启动 JupyterLab 的地方设置它，然后重启 JupyterLab：',
  'On Windows: %1 in a new terminal. On JupyterHub: ask your administrator to set it for your server.':
    'Windows 上：在新终端中运行 %1。JupyterHub 上：请管理员为你的服务器设置它。',
  'No model is ready yet': '还没有可用的模型',
  'nini needs a language model to answer. Add one in the Models tab: a local server (Ollama, vLLM, LM Studio) needs no key; a cloud provider reads its key from an environment variable.':
    'nini 需要一个语言模型才能回答。请在“模型”标签页添加一个：本地服务器（Ollama、vLLM、LM Studio）不需要密钥；云端提供方从环境变量读取密钥。',
  'nini needs a language model to answer, and this server has none that works. Ask an administrator of this server to add one.':
    'nini 需要一个语言模型才能回答，而本服务器没有可用的模型。请本服务器的管理员添加一个。',
  'not usable': '不可用',
  'Set up a model': '设置模型',
  'See the models': '查看模型',
  // -- end of part D
  // -- part C (issue 33: where code runs, readable results)
  Sandbox: '沙箱',
  'Isolated, with copies of your variables': '隔离运行，用你的变量的副本',
  'Notebook kernel': '笔记本内核',
  'Your kernel and files, not sandboxed': '你的内核和文件，不在沙箱中',
  'Where the code runs': '代码在哪里运行',
  sandboxed: '沙箱中',
  "In nini's sandbox: no network, your kernel and files out of reach":
    '在 nini 的沙箱中：没有网络，碰不到你的内核和文件',
  gateway: '网关',
  "On the Jupyter server's kernel gateway, in its sandbox":
    '在 Jupyter 服务器的内核网关上，在它的沙箱中',
  'no sandbox': '无沙箱',
  'In a nini kernel without a sandbox (execution.sandbox is none, or bubblewrap is missing)':
    '在没有沙箱的 nini 内核中（execution.sandbox 为 none，或缺少 bubblewrap）',
  'in your kernel': '在你的内核中',
  "In your notebook's kernel, with your variables and rights: not sandboxed":
    '在你的笔记本内核中，带着你的变量和权限：不在沙箱中',
  'R sandbox': 'R 沙箱',
  "In nini's sandboxed R worker: no network, your kernel and files out of reach":
    '在 nini 的沙箱 R 进程中：没有网络，碰不到你的内核和文件',
  'R, no sandbox': 'R，无沙箱',
  'In an R worker without a sandbox (execution.sandbox is none, or bubblewrap is missing)':
    '在没有沙箱的 R 进程中（execution.sandbox 为 none，或缺少 bubblewrap）',
  nini: 'nini',
  "One of nini's own tools: no code the agent wrote runs":
    'nini 自己的工具：不运行智能体写的代码',
  "in nini's sandbox, without a notebook's variables (no notebook with a kernel is open)":
    '在 nini 的沙箱中，没有笔记本的变量（没有打开带内核的笔记本）',
  "in nini's sandbox, with copies of %1's variables the agent asks for":
    '在 nini 的沙箱中，用智能体要的 %1 变量的副本',
  "in %1's kernel, not sandboxed: each step shows its code and waits for your OK":
    '在 %1 的内核中，不在沙箱中：每一步先显示代码，等你同意',
  "in %1's kernel, not sandboxed, WITHOUT asking: approval is off on this server (execution.approve_in_user_kernel)":
    '在 %1 的内核中，不在沙箱中，且不会询问你：这个服务器关闭了审批（execution.approve_in_user_kernel）',
  'Open a notebook first: the code goes next to its active cell':
    '请先打开一个笔记本：代码会放在它的当前单元格旁',
  'Code actions': '代码操作',
  Copy: '复制',
  Copied: '已复制',
  'Insert below': '插入到下方',
  Inserted: '已插入',
  'Replace cell': '替换单元格',
  Replaced: '已替换',
  'chart %1': '图表 %1',
  'the chart could not be read (HTTP %1)': '读不到这张图表（HTTP %1）',
  'Open a notebook first: the chart goes below its active cell':
    '请先打开一个笔记本：图表会插入到它的当前单元格下方',
  'Open the chart large': '放大查看图表',
  'Insert chart into notebook': '把图表插入笔记本',
  'output_df · %1 rows × %2 columns': 'output_df · %1 行 × %2 列',
  'First %1 of %2 rows': '共 %2 行中的前 %1 行',
  '(line %1)': '（第 %1 行）',
  Traceback: '调用栈',
  running: '运行中',
  done: '完成',
  failed: '失败',
  'status: %1': '状态：%1',
  Output: '输出',
  // -- end of part C
  // -- part F: context chips, run footer, timestamps, session list
  '%1 + %2 tokens': '%1 + %2 个 token',
  '%1 cannot be attached as text (%2)': '%1 不能作为文本附加（%2）',
  '%1 · encoding %2, detected as nini loads it (not UTF-8)':
    '%1 · 编码 %2，按 nini 加载数据时的方式识别（不是 UTF-8）',
  '%1 is too large to attach (over 2 MB); ask nini to load it as a dataset instead':
    '%1 太大，不能附加（超过 2 MB）；请让 nini 把它作为数据集加载',
  '%1 prompt tokens and %2 completion tokens over %3 model calls':
    '%3 次模型调用共 %1 个输入 token、%2 个输出 token',
  '%1 steps': '%1 步',
  '1 step': '1 步',
  '%1 · cell %2': '%1 · 单元格 %2',
  '%1: the active cell and the cells above it go with the question':
    '%1：当前单元格及其上方的单元格随问题一起发送',
  '(%1 calls reported no usage)': '（%1 次调用没有报告用量）',
  'Attach cells or files (or type @)': '附加单元格或文件（或输入 @）',
  Cancel: '取消',
  'Cells and files to attach': '可附加的单元格和文件',
  'Delete %1': '删除 %1',
  'Delete this session?': '删除这个会话？',
  Delete: '删除',
  'How long the turn took': '这一轮用了多长时间',
  'Leave %1 out of the next question': '下一个问题不带上 %1',
  'Past sessions': '以往会话',
  'New title of %1': '%1 的新标题',
  'No cell or file matches': '没有匹配的单元格或文件',
  'No session matches “%1”': '没有与“%1”匹配的会话',
  'No sessions yet': '还没有会话',
  'Remove %1': '移除 %1',
  'Rename %1': '重命名 %1',
  'Search sessions': '搜索会话',
  'Search titles and conversations': '搜索标题和对话内容',
  'Sent with the next question': '随下一个问题发送',
  Sessions: '会话',
  'Sessions: %1': '会话：%1',
  'Steps (tool calls) the turn ran': '这一轮运行的步骤（工具调用）',
  'What the turn took': '这一轮的用时与用量',
  // -- issue 38: how full the context is, and the summary of a long session's older turns
  'context %1 (%2%)': '上下文 %1（%2%）',
  '%1 tokens of a context window of %2; %3 turns sent whole, %4 earlier turns summarized':
    '上下文窗口 %2 个 token 中用了 %1 个；%3 轮完整发送，%4 轮更早的内容已概括',
  'Earlier in this session': '本会话早前内容',
  ' (%1 turns summarized)': '（已概括 %1 轮）',
  ' (1 turn summarized)': '（已概括 1 轮）',
  'What the model was given of the turns that no longer fit its context':
    '不再放得进模型上下文的那些轮次，模型得到的概括',
  'cell %1': '单元格 %1',
  'variables of %1': '%1 的变量',
  '“%1”, its steps, charts and files are deleted for good.':
    '“%1”及其步骤、图表和文件将被永久删除。',
  "The cost at the provider's configured price":
    '按该提供方配置的价格计算的费用',
  "The agent may ask for copies of %1's variables, made in nini's sandbox":
    '智能体可以要 %1 变量的副本，副本在 nini 的沙箱中生成',
  'Selected cells of the notebook': '笔记本中选中的单元格',
  'Files selected in the file browser': '文件浏览器中选中的文件',
  'Price per million prompt tokens (optional)':
    '每百万输入 token 的价格（可选）',
  'Price per million completion tokens (optional)':
    '每百万输出 token 的价格（可选）',
  'Currency of the prices': '价格的货币',
  'A price is a number of 0 or more, like %1': '价格是不小于 0 的数，例如 %1',
  'A currency code, like USD or CNY': '货币代码，例如 USD 或 CNY',
  // -- end of part F
  // -- part A: approvals in the step card, the live status line, Stop
  'Thinking · %1 s': '思考中 · %1 秒',
  'Writing the answer · %1 s': '正在写回答 · %1 秒',
  'Running step %1 · %2 s': '正在运行第 %1 步 · %2 秒',
  'Starting sandbox…': '正在启动沙箱…',
  'Starting the kernel…': '正在启动内核…',
  'The idle kernel was shut down; starting a new one…':
    '空闲的内核已被关闭，正在启动新的内核…',
  '%1 s': '%1 秒',
  'Waiting for your OK · %1 s': '等待你的确认 · %1 秒',
  'Stopping… · %1 s': '正在停止… · %1 秒',
  stopped: '已停止',
  Stop: '停止',
  'Stop the run': '停止这次运行',
  'Waiting for your OK': '等待你的确认',
  'Allowed once': '已允许一次',
  'Allowed for this session': '已在本会话内允许',
  'Rejected: it did not run': '已拒绝：这一步没有运行',
  'Nobody answered in time: it did not run': '无人及时回答：这一步没有运行',
  'Stopped: it did not run': '已停止：这一步没有运行',
  'A step waits for your approval (Enter: allow once, Escape: reject)':
    '一个步骤在等待你的批准（Enter：允许一次，Escape：拒绝）',
  'This step runs in your kernel, not sandboxed: it can read and change your variables and files.':
    '这一步在你的内核中运行，不在沙箱中：它可以读取和修改你的变量和文件。',
  'Allow once': '允许一次',
  'Allow for this session': '本会话内允许',
  Reject: '拒绝',
  'Run this step in your kernel (Enter)': '在你的内核中运行这一步（Enter）',
  "Run this step and the session's next steps in your kernel without asking":
    '在你的内核中运行这一步，本会话之后的步骤也不再询问',
  'Do not run this step (Escape)': '不运行这一步（Escape）',
  'nini: a step waits for your OK. It runs in your kernel, not sandboxed.':
    'nini：一个步骤在等待你的确认。它在你的内核中运行，不在沙箱中。',
  Show: '查看',
  'Show the step and its code in the nini chat':
    '在 nini 对话中查看这一步和它的代码',
  '(the first %1 of %2 characters)': '（共 %2 个字符中的前 %1 个）',
  'Allowed for this session ✕': '已在本会话内允许 ✕',
  "This session's steps run in your kernel without asking. Click to be asked again.":
    '本会话的步骤在你的内核中运行，不再询问。点击后重新开始询问。'
  // -- end of part A
};
