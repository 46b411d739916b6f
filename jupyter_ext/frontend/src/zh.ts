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
  Models: '模型'
};
